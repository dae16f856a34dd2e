package controlplane

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/faultline/faultline/timeline"
)

// podStart is one pod's way from creation to running.
type podStart struct {
	namespace, owner   string
	created, scheduled time.Time
	running, deleted   time.Time
}

// podStarts reads, per pod, when it was created, scheduled (bound to a
// node) and running, from its versions.
func podStarts(vs []timeline.ObjectVersion) []podStart {
	by := map[string]*podStart{}
	var order []string
	for i := range vs {
		v := &vs[i]
		k := v.Object.UID
		if k == "" {
			k = v.Object.Namespace + "/" + v.Object.Name
		}
		var m struct {
			Metadata struct {
				CreationTimestamp time.Time  `json:"creationTimestamp"`
				DeletionTimestamp *time.Time `json:"deletionTimestamp"`
				OwnerReferences   []struct {
					Kind, Name string
				} `json:"ownerReferences"`
			} `json:"metadata"`
			Spec struct {
				NodeName string `json:"nodeName"`
			} `json:"spec"`
			Status struct {
				Phase      string `json:"phase"`
				Conditions []struct {
					Type, Status       string
					LastTransitionTime time.Time `json:"lastTransitionTime"`
				} `json:"conditions"`
			} `json:"status"`
		}
		if json.Unmarshal(v.Content, &m) != nil {
			continue
		}
		p := by[k]
		if p == nil {
			p = &podStart{namespace: v.Object.Namespace, created: m.Metadata.CreationTimestamp}
			if len(m.Metadata.OwnerReferences) > 0 {
				p.owner = m.Metadata.OwnerReferences[0].Kind + "/" + v.Object.Namespace + "/" + m.Metadata.OwnerReferences[0].Name
			}
			by[k] = p
			order = append(order, k)
		}
		if p.created.IsZero() {
			p.created = m.Metadata.CreationTimestamp
		}
		if p.scheduled.IsZero() && m.Spec.NodeName != "" {
			p.scheduled = v.Time
			for _, c := range m.Status.Conditions {
				if c.Type == "PodScheduled" && c.Status == "True" && !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Before(p.scheduled) {
					p.scheduled = c.LastTransitionTime
				}
			}
		}
		if p.running.IsZero() && m.Status.Phase == "Running" {
			p.running = v.Time
		}
		if p.deleted.IsZero() && m.Metadata.DeletionTimestamp != nil {
			p.deleted = *m.Metadata.DeletionTimestamp
		}
	}
	out := make([]podStart, 0, len(order))
	for _, k := range order {
		out = append(out, *by[k])
	}
	return out
}

// podStartup is creation -> running latency, against the SLO: p99 ≤ 5 s.
func podStartup(starts []podStart) *PodStartup {
	var all, sched []float64
	byOwner := map[string][]float64{}
	for _, s := range starts {
		if s.created.IsZero() || s.running.IsZero() {
			continue
		}
		ms := float64(s.running.Sub(s.created)) / 1e6
		if ms < 0 {
			continue
		}
		all = append(all, ms)
		if !s.scheduled.IsZero() {
			sched = append(sched, float64(s.scheduled.Sub(s.created))/1e6)
		}
		byOwner[s.owner] = append(byOwner[s.owner], ms)
	}
	if len(all) == 0 {
		return nil
	}
	p := &PodStartup{Pods: len(all), P50Ms: quantile(all, 0.5), P99Ms: quantile(all, 0.99), SchedP99Ms: quantile(sched, 0.99)}
	p.SLOMet = p.P99Ms <= 5000
	for o, v := range byOwner {
		if o == "" || len(v) < 2 {
			continue
		}
		p.PerOwner = append(p.PerOwner, OwnerP99{Owner: o, Pods: len(v), P50Ms: quantile(v, 0.5), P99Ms: quantile(v, 0.99)})
	}
	sort.Slice(p.PerOwner, func(i, j int) bool {
		if p.PerOwner[i].P99Ms != p.PerOwner[j].P99Ms {
			return p.PerOwner[i].P99Ms > p.PerOwner[j].P99Ms
		}
		return p.PerOwner[i].Owner < p.PerOwner[j].Owner
	})
	return p
}
