package main

import (
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// Cluster objects.

type pod struct {
	ns, name string
	node     int
	job      *trainJob // nil for daemon-set pods
	ds       *daemonSet
	ordinal  int // 0 is the launcher
}

func (g *generator) trainPod(i int) pod { return g.trainPods[i] }

func (g *generator) dsPod(d, node int) pod {
	ds := &daemonSets[d]
	return pod{ns: ds.ns, name: ds.name + "-" + g.suffix(ds.name, g.nodes[node].name), node: node, ds: ds}
}

func (g *generator) anyPod() pod {
	if g.rng.Float64() < 0.65 {
		return g.trainPod(g.rng.IntN(g.podTotal))
	}
	return g.dsPod(g.rng.IntN(len(daemonSets)), g.rng.IntN(len(g.nodes)))
}

func (g *generator) anyTrainPod() pod { return g.trainPod(g.rng.IntN(g.podTotal)) }

func (g *generator) podActor(p pod) actor {
	key := p.ns + "/" + p.name
	if a, ok := g.podActs[key]; ok {
		return a
	}
	a := g.newPodActor(p)
	g.podActs[key] = a
	return a
}

func (g *generator) newPodActor(p pod) actor {
	if p.job == nil {
		return actor{user: g.saUser(p.ns, p.ds.sa, &podBinding{pod: p.name, node: p.node}), ua: uaKubeProxy, ips: []string{g.nodes[p.node].ip},
			reason: `RBAC: allowed by ClusterRoleBinding "system:node-proxier" of ClusterRole "system:node-proxier" to ServiceAccount "kube-proxy/kube-system"`, token: true}
	}
	ua := trainerUserAgents[g.hash("ua", p.ns, p.name)%uint64(len(trainerUserAgents))]
	if p.ordinal == 0 {
		ua = uaKubectl
	}
	return actor{
		user:   g.saUser(p.ns, "trainer", &podBinding{pod: p.name, node: p.node}),
		ua:     ua,
		ips:    []string{g.podIP(p.node, int(g.hash("slot", p.ns, p.name)%200))},
		reason: fmt.Sprintf("RBAC: allowed by RoleBinding %q of Role %q to ServiceAccount %q", "trainer/"+p.ns, "trainer", "trainer/"+p.ns),
		token:  true,
	}
}

func (g *generator) nodeActor(n int) actor {
	nd := g.nodes[n]
	return actor{user: nd.user, ua: uaKubelet, ips: nd.ips}
}

func (g *generator) podIP(node, slot int) string {
	return fmt.Sprintf("10.%d.%d.%d", 128+node/256, node%256, 2+slot)
}

func (g *generator) podConfigMaps(p pod) []string {
	switch {
	case p.job != nil:
		return []string{"kube-root-ca.crt", p.job.name + "-config"}
	case p.ds.name == "kube-proxy":
		return []string{"kube-root-ca.crt", "kube-proxy"}
	}
	return []string{"kube-root-ca.crt"}
}

func (g *generator) podSecrets(p pod) []string {
	return []string{p.job.name + "-ssh", nsSecrets[0], nsSecrets[1]}
}

func pickOne[T any](g *generator, xs []T) T { return xs[g.rng.IntN(len(xs))] }

func core(resource, ns, name string) target { return target{resource: resource, ns: ns, name: name} }

func grouped(resource, ns, name string) target {
	return target{group: groupOf[resource], resource: resource, ns: ns, name: name}
}

func (g *generator) anyNode() int { return g.rng.IntN(len(g.nodes)) }

func (g *generator) anyJob() *trainJob { return &trainJobs[g.rng.IntN(len(trainJobs))] }

func jobSelector(job *trainJob, role string) string {
	s := "training.kubeflow.org/job-name=" + job.name
	if role != "" {
		s += ",training.kubeflow.org/job-role=" + role
	}
	return s
}

func (g *generator) listQuery(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v.Encode()
}

// watchQuery is the query client-go reflectors send.
func (g *generator) watchQuery(r *request, kv ...string) {
	ts := 300 + g.rng.IntN(300)
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	v.Set("allowWatchBookmarks", "true")
	v.Set("resourceVersion", strconv.FormatUint(g.rv-g.rng.Uint64N(20000), 10))
	v.Set("timeout", (time.Duration(ts) * time.Second).String())
	v.Set("timeoutSeconds", strconv.Itoa(ts))
	v.Set("watch", "true")
	r.query, r.watchTimeout = v.Encode(), ts
}
