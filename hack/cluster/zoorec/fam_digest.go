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

func runDigestDrift(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	ns := Pick(c, []string{"serve", "inference", "search", "ads"})
	names := []string{"api", "ranker-serve", "embed-serve", "gateway"}
	perm := c.rng.Perm(len(names))
	name, other := names[perm[0]], names[perm[1]]
	repo := "registry.example/" + name
	image := fmt.Sprintf("%s:%d.%d", repo, 1+c.Intn(3), c.Intn(10))
	otherImage := fmt.Sprintf("registry.example/%s:2.%d", other, c.Intn(10))
	good, bad := sha(fmt.Sprintf("%s-%d-a", image, c.seed)), sha(fmt.Sprintf("%s-%d-b", image, c.seed))
	otherDigest := sha(otherImage)
	replicas := c.Between(10, 30)
	trigger := Pick(c, []string{"scale", "restart"})
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	t := Template{Image: image, Container: "server"}
	if err := c.Deployment(ctx, routineActor, ns, name, replicas, t); err != nil {
		return "", err
	}
	if err := c.Deployment(ctx, routineActor, ns, other, c.Between(4, 10), Template{Image: otherImage, Container: "server"}); err != nil {
		return "", err
	}
	for _, d := range []struct{ app, image, digest string }{{name, image, good}, {other, otherImage, otherDigest}} {
		pods, err := c.Running(ctx, ns, "app="+d.app)
		if err != nil {
			return "", err
		}
		if err := c.ReportImage(ctx, ns, pods, d.image, repoOf(d.image)+"@"+d.digest); err != nil {
			return "", err
		}
	}
	if err := c.Routine(ctx, fleet, c.Between(1, 3)); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(6*time.Second, 12*time.Second))

	// The other service is scaled too (its pods start fine): a decoy by the
	// same actor that scales the broken one.
	actor := Actor{User: "platform-automation", UserAgent: "horizontal-pod-autoscaler/v1.37.2"}
	if trigger == "restart" {
		actor = c.DrawActor()
	}
	pods, err := c.Pods(ctx, ns, "app="+name)
	if err != nil {
		return "", err
	}
	before := podNames(pods)
	lastGood := Now()
	Sleep(ctx, time.Second)
	pushedAt := Now() // the registry: nothing in the cluster records it
	c.log.Info("registry re-push", "image", image, "from", good, "to", bad)
	Sleep(ctx, c.Dur(2*time.Second, 8*time.Second))
	crash := c.StartCrasher(ctx, ns, "app="+name, before, image, repo+"@"+bad, "fatal: model schema v7 not supported by this build")
	otherPods, _ := c.Pods(ctx, ns, "app="+other)
	otherBefore := podNames(otherPods)
	more := c.Between(5, 12)
	switch trigger {
	case "scale":
		if err := c.Scale(ctx, actor, ns, other, len(otherPods)+c.Between(2, 4)); err != nil {
			return "", err
		}
		if err := c.Scale(ctx, actor, ns, name, replicas+more); err != nil {
			return "", err
		}
	default:
		if err := c.RolloutRestart(ctx, actor, ns, other); err != nil {
			return "", err
		}
		if err := c.RolloutRestart(ctx, actor, ns, name); err != nil {
			return "", err
		}
		more = (replicas + 3) / 4
	}
	if err := crash.WaitFor(ctx, more, 2*time.Minute); err != nil {
		crash.Stop()
		return "", err
	}
	// The other service's new pods report their (unchanged) digest and run.
	if _, err := c.NewPods(ctx, ns, "app="+other, otherBefore, 1, time.Minute, func(p []corev1.Pod) error {
		return c.ReportImage(ctx, ns, p, otherImage, repoOf(otherImage)+"@"+otherDigest)
	}); err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(5*time.Second, 10*time.Second))
	badPods, firstBad, err := crash.Stop()
	if err != nil {
		return "", err
	}
	e.Boundary = &Boundary{LastGood: lastGood, FirstBad: firstBad, Tolerance: "2s"}
	dim := "image.digest/server"
	e.Changes = []Change{{Ref: "Deployment/" + ns + "/" + name, Dimension: dim, From: good, To: bad, At: pushedAt}}
	e.Slice = map[string]string{dim: bad}
	e.SliceEquivalents = []map[string]string{}
	if trigger == "restart" && len(badPods) > 0 {
		e.SliceEquivalents = append(e.SliceEquivalents, map[string]string{"owner/Deployment": name, "owner.podTemplateHash": badPods[0].Labels["pod-template-hash"]})
	}
	e.Population = map[string]string{"owner/Deployment": name}
	e.CounterexampleDiffersIn = []string{dim}
	e.Mitigation = []Action{{Action: "set", Target: "Deployment/" + ns + "/" + name + " image", To: repo + "@" + good}}
	e.extra("tagUnchanged", image)
	e.extra("trigger", trigger)
	e.extra("crashLooping", len(badPods))
	story := fmt.Sprintf(`New replicas of %s/%s crash-loop, though nobody changed its Deployment.

## What on-call saw
%s/%s (image %s) got new pods a moment ago (%s). Every new pod goes into
CrashLoopBackOff with exit 1; the old ones keep serving. The Deployment's image tag is
the same as last week, and %s in the same namespace is fine.`, ns, name, ns, name, image, trigger, other)
	return story, nil
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
