package controlplane

import "sort"

// clientCosts sums, per client (user agent and user), its requests, the
// LISTs it sent to etcd, its unpaged cluster-scope LISTs, its watch openings
// and its 429s; the costliest in etcd LISTs first.
func clientCosts(classes []*Class, span float64) []ClientCost {
	by := map[string]*ClientCost{}
	for _, c := range classes {
		k := c.Client + "\x00" + c.User
		cc := by[k]
		if cc == nil {
			cc = &ClientCost{Client: c.Client, User: c.User}
			by[k] = cc
		}
		cc.Requests += c.Count
		cc.EtcdLists += c.EtcdLists
		if c.Scope == "cluster" {
			cc.UnpagedLists += c.Unpaged
		}
		if c.Verb == "watch" {
			cc.Watches += c.Count
		}
		cc.Throttled += c.Codes["429"]
	}
	out := make([]ClientCost, 0, len(by))
	for _, cc := range by {
		cc.WatchesPerMin = round(float64(cc.Watches) / (span / 60))
		out = append(out, *cc)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].EtcdLists != out[j].EtcdLists {
			return out[i].EtcdLists > out[j].EtcdLists
		}
		if out[i].Requests != out[j].Requests {
			return out[i].Requests > out[j].Requests
		}
		return out[i].Client+out[i].User < out[j].Client+out[j].User
	})
	return out
}
