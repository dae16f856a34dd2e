package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Family 3: a tag is re-pushed in the registry. Nothing in the cluster
// changes, but pods that start afterwards pull a different digest and
// crash, while those already running keep the old one.

func init() {
	register(&Family{Name: "digest-drift", Summary: "a tag is re-pushed: new pods pull another digest under the same tag and crash",
		Run: runDigestDrift})
}

// digestDrift is what a seed draws for the family.
type digestDrift struct {
	ns, name, other string // the broken service and the healthy one
	repo, image     string // the broken service's repository and tag
	otherImage      string
	good, bad       string // the digests before and after the re-push
	otherDigest     string
	replicas        int
	trigger         string // scale or restart
}

func drawDigestDrift(c *Cluster) *digestDrift {
	d := &digestDrift{ns: Pick(c, []string{"serve", "inference", "search", "ads"})}
	names := []string{"api", "ranker-serve", "embed-serve", "gateway"}
	perm := c.rng.Perm(len(names))
	d.name, d.other = names[perm[0]], names[perm[1]]
	d.repo = "registry.example/" + d.name
	d.image = fmt.Sprintf("%s:%d.%d", d.repo, 1+c.Intn(3), c.Intn(10))
	d.otherImage = fmt.Sprintf("registry.example/%s:2.%d", d.other, c.Intn(10))
	d.good, d.bad = sha(fmt.Sprintf("%s-%d-a", d.image, c.seed)), sha(fmt.Sprintf("%s-%d-b", d.image, c.seed))
	d.otherDigest = sha(d.otherImage)
	d.replicas = c.Between(10, 30)
	d.trigger = Pick(c, []string{"scale", "restart"})
	return d
}

func runDigestDrift(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	d := drawDigestDrift(c)
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	if err := d.setUp(ctx, c); err != nil {
		return "", err
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))

	// The other service is scaled too (its pods start fine): a decoy by the
	// same actor that scales the broken one.
	actor := Actor{User: "platform-automation", UserAgent: "horizontal-pod-autoscaler/v1.37.2"}
	if d.trigger == "restart" {
		actor = c.DrawActor()
	}
	pods, err := c.Pods(ctx, d.ns, "app="+d.name)
	if err != nil {
		return "", err
	}
	before := podNames(pods)
	lastGood := Now()
	Sleep(ctx, time.Second)
	pushedAt := Now() // the registry: nothing in the cluster records it
	c.log.Info("registry re-push", "image", d.image, "from", d.good, "to", d.bad)
	Sleep(ctx, c.Dur(2*time.Second, 8*time.Second))
	crash := c.StartCrasher(ctx, d.ns, "app="+d.name, before, d.image, d.repo+"@"+d.bad, "fatal: model schema v7 not supported by this build")
	otherPods, _ := c.Pods(ctx, d.ns, "app="+d.other)
	otherBefore := podNames(otherPods)
	more, err := d.startNewPods(ctx, c, actor, len(otherPods))
	if err != nil {
		return "", err
	}
	if err := crash.WaitOrStop(ctx, more, 2*time.Minute); err != nil {
		return "", err
	}
	// The other service's new pods report their (unchanged) digest and run.
	if _, err := c.NewPods(ctx, d.ns, "app="+d.other, otherBefore, 1, time.Minute, func(p []corev1.Pod) error {
		return c.ReportImage(ctx, d.ns, p, d.otherImage, repoOf(d.otherImage)+"@"+d.otherDigest)
	}); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(5*time.Second, 10*time.Second))
	badPods, firstBad, err := crash.Stop()
	if err != nil {
		return "", err
	}
	e.Boundary = crashBoundary(lastGood, firstBad)
	d.truth(e, pushedAt, badPods)
	return d.story(), nil
}

// setUp deploys both services and has their pods report the digests they
// run.
func (d *digestDrift) setUp(ctx context.Context, c *Cluster) error {
	t := Template{Image: d.image, Container: "server"}
	if err := c.Deployment(ctx, routineActor, d.ns, d.name, d.replicas, t); err != nil {
		return err
	}
	if err := c.Deployment(ctx, routineActor, d.ns, d.other, c.Between(4, 10), Template{Image: d.otherImage, Container: "server"}); err != nil {
		return err
	}
	for _, x := range []struct{ app, image, digest string }{{d.name, d.image, d.good}, {d.other, d.otherImage, d.otherDigest}} {
		pods, err := c.Running(ctx, d.ns, "app="+x.app)
		if err != nil {
			return err
		}
		if err := c.ReportImage(ctx, d.ns, pods, x.image, repoOf(x.image)+"@"+x.digest); err != nil {
			return err
		}
	}
	return nil
}

// trigger_ starts new pods of both services, the other first: it scales
// them up, or restarts their rollouts. It returns how many of the broken
// service's new pods to wait for.
func (d *digestDrift) startNewPods(ctx context.Context, c *Cluster, actor Actor, otherPods int) (int, error) {
	more := c.Between(5, 12)
	switch d.trigger {
	case "scale":
		if err := c.Scale(ctx, actor, d.ns, d.other, otherPods+c.Between(2, 4)); err != nil {
			return 0, err
		}
		if err := c.Scale(ctx, actor, d.ns, d.name, d.replicas+more); err != nil {
			return 0, err
		}
	default:
		if err := c.RolloutRestart(ctx, actor, d.ns, d.other); err != nil {
			return 0, err
		}
		if err := c.RolloutRestart(ctx, actor, d.ns, d.name); err != nil {
			return 0, err
		}
		more = (d.replicas + 3) / 4
	}
	return more, nil
}

// truth sets the change (the re-push, at pushedAt), the slice, the
// population, the counterexample and the mitigation.
func (d *digestDrift) truth(e *Expected, pushedAt time.Time, badPods []corev1.Pod) {
	dim := "image.digest/server"
	e.Changes = []Change{{Ref: "Deployment/" + d.ns + "/" + d.name, Dimension: dim, From: d.good, To: d.bad, At: pushedAt}}
	e.Slice = map[string]string{dim: d.bad}
	e.SliceEquivalents = []map[string]string{}
	if d.trigger == "restart" && len(badPods) > 0 {
		e.SliceEquivalents = append(e.SliceEquivalents, map[string]string{"owner/Deployment": d.name, "owner.podTemplateHash": badPods[0].Labels["pod-template-hash"]})
	}
	e.Population = map[string]string{"owner/Deployment": d.name}
	e.CounterexampleDiffersIn = []string{dim}
	e.Mitigation = []Action{{Action: "set", Target: "Deployment/" + d.ns + "/" + d.name + " image", To: d.repo + "@" + d.good}}
	e.extra("tagUnchanged", d.image)
	e.extra("trigger", d.trigger)
	e.extra("crashLooping", len(badPods))
}

// story is what on-call saw.
func (d *digestDrift) story() string {
	return fmt.Sprintf(`New replicas of %s/%s crash-loop, though nobody changed its Deployment.

## What on-call saw
%s/%s (image %s) got new pods a moment ago (%s). Every new pod goes into
CrashLoopBackOff with exit 1; the old ones keep serving. The Deployment's image tag is
the same as last week, and %s in the same namespace is fine.`, d.ns, d.name, d.ns, d.name, d.image, d.trigger, d.other)
}

// repoOf is an image reference without its tag.
func repoOf(image string) string {
	for i := len(image) - 1; i >= 0; i-- {
		switch image[i] {
		case ':':
			return image[:i]
		case '/':
			return image
		}
	}
	return image
}
