package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Node is one kwok node of the fleet, as the zoo laid it out.
type Node struct {
	Name, Zone, Pool, Rack string
}

// Fleet is the zoo's nodes: zones, pools (each with its GPU product and
// driver) and racks within zones.
type Fleet struct {
	Nodes []Node
	Zones []string
	Pools []string
	Racks []string
}

var (
	zoneNames = []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"}
	poolNames = []string{"h100-a", "h100-b", "a100-c", "h200-d"}
	products  = map[string]string{"h100-a": "NVIDIA-H100-80GB-HBM3", "h100-b": "NVIDIA-H100-80GB-HBM3", "a100-c": "NVIDIA-A100-SXM4-80GB", "h200-d": "NVIDIA-H200-141GB-HBM3e"}
	drivers   = map[string]string{"h100-a": "550", "h100-b": "550", "a100-c": "535", "h200-d": "560"}
)

// Node identity as the fleet's kubelets report it before any change.
const (
	baseKernel  = "6.8.0-1015-aws"
	baseRuntime = "containerd://2.1.4"
	baseKubelet = "v1.37.2"
	rackLabel   = "topology.kubernetes.io/rack"
)

// Filter returns the nodes of the fleet for which keep is true.
func (f *Fleet) Filter(keep func(Node) bool) []Node {
	var out []Node
	for _, n := range f.Nodes {
		if keep(n) {
			out = append(out, n)
		}
	}
	return out
}

// Subset is a slice of the fleet named by one node label.
type Subset struct {
	Label, Value string // e.g. topology.kubernetes.io/zone=us-east-1b
	Dimension    string // the identity dimension that names it: node.zone, node.pool, node.label/...
	Nodes        []Node
}

// Selector is the subset's label selector.
func (s Subset) Selector() string { return s.Label + "=" + s.Value }

// Refs are the subset's nodes as "Node/NAME".
func (s Subset) Refs() []string {
	out := make([]string, len(s.Nodes))
	for i, n := range s.Nodes {
		out[i] = "Node/" + n.Name
	}
	return out
}

// Names are the subset's node names.
func (s Subset) Names() []string {
	out := make([]string, len(s.Nodes))
	for i, n := range s.Nodes {
		out[i] = n.Name
	}
	return out
}

// DrawSubset draws a pool, a zone or a rack of the fleet.
func (c *Cluster) DrawSubset(f *Fleet, kinds ...string) Subset {
	if len(kinds) == 0 {
		kinds = []string{"pool", "zone", "rack"}
	}
	switch Pick(c, kinds) {
	case "pool":
		v := Pick(c, f.Pools)
		return Subset{"pool", v, "node.pool", f.Filter(func(n Node) bool { return n.Pool == v })}
	case "zone":
		v := Pick(c, f.Zones)
		return Subset{"topology.kubernetes.io/zone", v, "node.zone", f.Filter(func(n Node) bool { return n.Zone == v })}
	default:
		v := Pick(c, f.Racks)
		return Subset{rackLabel, v, "node.label/" + rackLabel, f.Filter(func(n Node) bool { return n.Rack == v })}
	}
}

// Nodes creates n kwok nodes over zones, pools and racks (about 20 nodes a
// rack), and waits until they are Ready.
func (c *Cluster) Nodes(ctx context.Context, n int) (*Fleet, error) {
	zones := zoneNames[:3+c.Intn(2)]
	pools := poolNames[:3+c.Intn(2)]
	racksPerZone := max(1, n/len(zones)/20)
	f := &Fleet{Zones: zones, Pools: pools}
	rackSet := map[string]bool{}
	for i := range n {
		z := zones[i%len(zones)]
		nd := Node{
			Name: fmt.Sprintf("gpu-%04d", i),
			Zone: z,
			Pool: pools[(i/len(zones))%len(pools)],
			Rack: fmt.Sprintf("%s-r%02d", z, (i/len(zones))%racksPerZone),
		}
		f.Nodes = append(f.Nodes, nd)
		rackSet[nd.Rack] = true
	}
	for r := range rackSet {
		f.Racks = append(f.Racks, r)
	}
	sort.Strings(f.Racks)
	work := make(chan Node)
	errs := make(chan error, len(f.Nodes))
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for nd := range work {
				if _, err := c.Admin.CoreV1().Nodes().Create(ctx, kwokNode(nd), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("create node %s: %w", nd.Name, err)
				}
			}
		}()
	}
	for _, nd := range f.Nodes {
		work <- nd
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	err := until(ctx, 5*time.Minute, fmt.Sprintf("%d nodes Ready", n), func() (bool, error) {
		l, err := c.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok", ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, nd := range l.Items {
			for _, cond := range nd.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= n, nil
	})
	c.log.Info("nodes ready", "nodes", n, "zones", len(zones), "pools", len(pools), "racks", len(f.Racks))
	return f, err
}

func kwokNode(n Node) *corev1.Node {
	res := corev1.ResourceList{"cpu": resource.MustParse("192"), "memory": resource.MustParse("2Ti"),
		"pods": resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("8")}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"type": "kwok", "kubernetes.io/hostname": n.Name,
				"topology.kubernetes.io/zone": n.Zone, rackLabel: n.Rack,
				"node.kubernetes.io/instance-type": "p5.48xlarge",
				"pool":                             n.Pool, "cloud.google.com/gke-nodepool": n.Pool,
				"nvidia.com/gpu.product":       products[n.Pool],
				"nvidia.com/cuda.driver.major": drivers[n.Pool],
			},
		},
		Status: corev1.NodeStatus{
			Allocatable: res, Capacity: res,
			NodeInfo: corev1.NodeSystemInfo{KernelVersion: baseKernel, OSImage: "Ubuntu 24.04.1 LTS",
				KubeletVersion: baseKubelet, ContainerRuntimeVersion: baseRuntime},
		},
	}
}

// LabelNodes sets a label on nodes as the actor (kubectl label -l ...),
// one request per node, and returns when the last is stored.
func (c *Cluster) LabelNodes(ctx context.Context, a Actor, nodes []string, key, value string) error {
	var patch any = map[string]any{"metadata": map[string]any{"labels": map[string]any{key: value}}}
	if value == "" {
		patch = map[string]any{"metadata": map[string]any{"labels": map[string]any{key: nil}}}
	}
	for _, n := range nodes {
		if err := c.PatchAs(ctx, a, "nodes", "", n, patch); err != nil {
			return err
		}
	}
	return nil
}

// ReportNodeInfo reports a new nodeInfo field on nodes, as their kubelets
// do after an upgrade and reboot (field: kernelVersion,
// containerRuntimeVersion, kubeletVersion).
func (c *Cluster) ReportNodeInfo(ctx context.Context, nodes []string, field, value string) error {
	b, _ := json.Marshal(map[string]any{"status": map[string]any{"nodeInfo": map[string]string{field: value}}})
	for _, n := range nodes {
		if _, err := c.Kwok.CoreV1().Nodes().Patch(ctx, n, types.StrategicMergePatchType, b, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("report %s of node %s: %w", field, n, err)
		}
	}
	return nil
}

// NotReady makes nodes stop reporting Ready, as a dead kubelet or a lost
// rack does (kwok's node-not-ready chaos stage), and returns the instant
// the first was asked to fail.
func (c *Cluster) NotReady(ctx context.Context, nodes []string) (time.Time, error) {
	at := Now()
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"node-not-ready.stage.kwok.x-k8s.io": "true"}}})
	for _, n := range nodes {
		if _, err := c.Admin.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
			return at, fmt.Errorf("node %s not ready: %w", n, err)
		}
	}
	return at, nil
}

// NodeReadyFalseAt waits until one of the nodes reports Ready other than
// True and returns when that was first seen. (kwok's not-ready stage does
// not stamp lastTransitionTime anew, so the condition's own time is no
// use; the poll is frequent enough to stay well within the tolerance.)
func (c *Cluster) NodeReadyFalseAt(ctx context.Context, nodes []string) (time.Time, error) {
	want := map[string]bool{}
	for _, n := range nodes {
		want[n] = true
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		at := Now()
		l, err := c.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
		if err != nil {
			return time.Time{}, err
		}
		for _, nd := range l.Items {
			if !want[nd.Name] {
				continue
			}
			for _, cond := range nd.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status != corev1.ConditionTrue {
					return at, nil
				}
			}
		}
		Sleep(ctx, 200*time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("no node of %d went NotReady in 90s", len(nodes))
}

// nodeSet returns the names as a set.
func nodeSet(nodes []Node) map[string]bool {
	out := map[string]bool{}
	for _, n := range nodes {
		out[n.Name] = true
	}
	return out
}

// onNodes returns the pods scheduled on one of the nodes.
func onNodes(pods []corev1.Pod, set map[string]bool) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if set[p.Spec.NodeName] {
			out = append(out, p)
		}
	}
	return out
}
