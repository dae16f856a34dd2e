package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Family 14: two independent faults overlap in time: a config key change
// breaks one service's new pods, and a rack or zone stops reporting.
// Family "control": routine days, with only noise and harmless changes.

func init() {
	register(&Family{Name: "overlap", Summary: "two independent faults overlap: a config change breaks one service while a rack or zone goes NotReady",
		Run: runOverlap})
	register(&Family{Name: "control", Summary: "a quiet control: routine changes, rollouts and one lone failure; no incident",
		Run: runControl})
}

func runOverlap(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	k := drawKeyChange(c, "configmaps")
	k.trigger = "restart"
	s := drawRackOrZone(c, fleet)
	nodeFirst := c.Intn(2) == 0
	gap := c.Dur(3*time.Second, 12*time.Second)
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := k.setup(ctx, c); err != nil {
		return "", err
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 2)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))

	// The config episode.
	victim := k.consumers[k.victim]
	actor := c.DrawActor()
	before, err := k.podsBefore(ctx, c)
	if err != nil {
		return "", err
	}
	var cfg, node Episode
	var cfgLastGood, nodeLastGood, nodeFirstBad time.Time
	var crash *Crasher
	bad := fmt.Sprintf("0.%d", 5+c.Intn(4))
	doConfig := func() error {
		cfgLastGood = Now()
		Sleep(ctx, time.Second)
		ch, err := k.change(ctx, c, actor, victim, "0.001", bad)
		if err != nil {
			return err
		}
		cfg.Changes = []Change{ch}
		Sleep(ctx, c.Dur(2*time.Second, 5*time.Second))
		crash = c.StartCrasher(ctx, k.ns, "app="+victim.name, before[victim.name], "registry.example/trainer:2.3", "", "invalid learning rate "+bad)
		_, err = k.restartConsumers(ctx, c)
		return err
	}
	doNodes := func() (err error) {
		nodeLastGood, nodeFirstBad, err = c.nodesDown(ctx, s, &node)
		return err
	}
	if nodeFirst {
		err = inTurn(ctx, gap, doNodes, doConfig)
	} else {
		err = inTurn(ctx, gap, doConfig, doNodes)
	}
	if err != nil {
		return "", err
	}
	if err := crash.WaitOrStop(ctx, 1, 2*time.Minute); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(15*time.Second, 25*time.Second))
	badPods, cfgFirstBad, err := crash.Stop()
	if err != nil {
		return "", err
	}
	configTruth(&cfg, victim.name, crashBoundary(cfgLastGood, cfgFirstBad), badPods)
	nodeTruth(&node, s, crashBoundary(nodeLastGood, nodeFirstBad))
	setEpisodes(e, cfg, node)
	e.extra("nodeFirst", nodeFirst)
	return fmt.Sprintf(`Pods crash-loop in %s while nodes drop out elsewhere: one incident or two?

## What on-call saw
New pods of a service in %s crash-loop, and at about the same time %d nodes stopped
reporting (%s). Both pages fired within a minute of each other.`, k.ns, k.ns, len(s.Nodes), s.Selector()), nil
}

// drawRackOrZone draws a rack or a zone of at least four nodes and at
// most half the fleet.
func drawRackOrZone(c *Cluster, fleet *Fleet) Subset {
	s := c.DrawSubset(fleet, "rack", "zone")
	for len(s.Nodes) > len(fleet.Nodes)/2 || len(s.Nodes) < 4 {
		s = c.DrawSubset(fleet, "rack", "zone")
	}
	return s
}

// nodesDown makes the nodes of s stop reporting, a second after the last
// good instant, and records the change in node; it returns the last good
// instant and when the nodes went NotReady.
func (c *Cluster) nodesDown(ctx context.Context, s Subset, node *Episode) (lastGood, firstBad time.Time, err error) {
	lastGood = Now()
	Sleep(ctx, time.Second)
	at, err := c.NotReady(ctx, s.Names())
	if err != nil {
		return lastGood, firstBad, err
	}
	node.Changes = []Change{{Ref: s.Selector(), Selector: s.Selector(), Objects: s.Refs(), Dimension: "node.ready", From: "True", To: "False", At: at}}
	firstBad, err = c.NodeReadyFalseAt(ctx, s.Names())
	return lastGood, firstBad, err
}

// inTurn runs first, waits gap, then runs second.
func inTurn(ctx context.Context, gap time.Duration, first, second func() error) error {
	if err := first(); err != nil {
		return err
	}
	Sleep(ctx, gap)
	return second()
}

// configTruth completes the config episode (its change set) whose new
// pods of the victim service crashed (badPods).
func configTruth(cfg *Episode, victim string, b *Boundary, badPods []corev1.Pod) {
	cfg.EpisodeBoundary = b
	cfg.Slice = map[string]string{cfg.Changes[0].Dimension: cfg.Changes[0].To}
	cfg.SliceEquivalents = []map[string]string{}
	if len(badPods) > 0 {
		cfg.SliceEquivalents = append(cfg.SliceEquivalents, map[string]string{"owner/Deployment": victim, "owner.podTemplateHash": badPods[0].Labels["pod-template-hash"]})
	}
	cfg.Population = map[string]string{}
	cfg.CounterexampleDiffersIn = []string{cfg.Changes[0].Dimension, "owner/Deployment", "owner.podTemplateHash"}
	cfg.Mitigation = []Action{{Action: "rollback", Target: cfg.Changes[0].Ref, To: cfg.Changes[0].From}}
}

// nodeTruth completes the node episode: the subset s went NotReady.
func nodeTruth(node *Episode, s Subset, b *Boundary) {
	node.EpisodeBoundary = b
	node.Slice = map[string]string{s.Dimension: s.Value}
	node.SliceEquivalents = []map[string]string{}
	node.Population = map[string]string{}
	node.CounterexampleDiffersIn = []string{s.Dimension}
	node.Mitigation = []Action{{Action: "cordon", Target: s.Selector(), Targets: []string{s.Dimension + "=" + s.Value}}}
}

// setEpisodes makes the episode that went bad first the main one, and the
// others e's OtherEpisodes.
func setEpisodes(e *Expected, eps ...Episode) {
	sort.SliceStable(eps, func(i, j int) bool { return eps[i].EpisodeBoundary.FirstBad.Before(eps[j].EpisodeBoundary.FirstBad) })
	e.Boundary = eps[0].EpisodeBoundary
	e.Episode = eps[0]
	e.Episode.EpisodeBoundary = nil
	e.OtherEpisodes = eps[1:]
}

func runControl(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Control = true
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	k := drawKeyChange(c, "configmaps")
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := k.setup(ctx, c); err != nil {
		return "", err
	}
	ns := Pick(c, []string{"batch", "ml"})
	if err := c.Job(ctx, routineActor, ns, "nightly-eval", c.Between(20, 80), 4, Template{Image: "registry.example/eval:1.2"}); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))
	// A routine day: config tweaks that the services take in their stride,
	// a rollout that goes through, node labels, scaling.
	actor := c.DrawActor()
	for i := range c.Between(3, 6) {
		switch c.Intn(4) {
		case 0:
			cs := k.consumers[c.Intn(len(k.consumers))]
			if _, err := k.change(ctx, c, actor, cs, "0.001", fmt.Sprintf("0.00%d", 2+i)); err != nil {
				return "", err
			}
			if err := c.RolloutRestart(ctx, actor, k.ns, cs.name); err != nil {
				return "", err
			}
		case 1:
			cs := k.consumers[c.Intn(len(k.consumers))]
			if err := c.SetImage(ctx, actor, k.ns, cs.name, "trainer", fmt.Sprintf("registry.example/trainer:2.%d", 4+i)); err != nil {
				return "", err
			}
		case 2:
			if err := c.Routine(ctx, fleet, 2); err != nil {
				return "", err
			}
		default:
			cs := k.consumers[c.Intn(len(k.consumers))]
			if err := c.Scale(ctx, actor, k.ns, cs.name, cs.replicas+c.Between(1, 4)); err != nil {
				return "", err
			}
		}
		Sleep(ctx, c.Dur(5*time.Second, 12*time.Second))
	}
	// Some of the eval job's pods finish, as jobs do.
	pods, err := c.Running(ctx, ns, "app=nightly-eval")
	if err != nil {
		return "", err
	}
	if err := c.Complete(ctx, ns, pods[:len(pods)/2]); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 10*time.Second))
	e.Changes = []Change{}
	e.CounterexampleDiffersIn = nil
	return fmt.Sprintf(`A routine hour on a %d-node cluster; somebody asks whether anything is wrong.

## What on-call saw
Nothing paged. A few config edits, a rollout and some scaling happened; one ops pod
failed earlier, as it sometimes does.`, len(fleet.Nodes)), nil
}

// Complete makes pods finish successfully (kwok's pod-complete stage, which
// hack/cluster/up applies to pods labelled faultline.dev/complete=true).
func (c *Cluster) Complete(ctx context.Context, ns string, pods []corev1.Pod) error {
	for _, p := range pods {
		if err := c.PatchAs(ctx, routineActor, "pods", ns, p.Name, map[string]any{"metadata": map[string]any{"labels": map[string]string{"faultline.dev/complete": "true"}}}); err != nil {
			return err
		}
	}
	return nil
}
