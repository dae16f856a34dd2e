package investigate

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
)

// Who used a quota's room. A pod create refused for a quota ("exceeded
// quota: NAME, requested: pods=1, used: pods=18, limited: pods=18") when
// no one wrote the quota (admission.go weighs those writes) was refused
// because other pods had taken what it allowed. The suspects are the
// arrivals of the workloads whose pods the namespace admitted in the
// window, before the first refusal: they used the room. Each reaches the
// units refused for that quota; the refused units' own workloads are not
// suspects of their own refusal.

// exceededQuota reads the quota an admission refusal names.
var exceededQuota = regexp.MustCompile(`exceeded quota: ([a-z0-9.-]+)`)

// quotaSuspects are the arrivals of the workloads that used the room of
// the quotas the slice's bad units were refused for.
func quotaSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	where map[string]string, since, until time.Time) ([]*Suspect, error) {
	rs, err := refusals(ctx, s, units, ids, where, since, until)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	var out []*Suspect
	for _, r := range rs {
		var refused []*outcome.Unit
		own := map[string]bool{}
		for i, u := range units {
			if u.Bad() && u.Namespace == r.ns && matches(ids[i], where) && exceededQuota.MatchString(u.Message) {
				refused = append(refused, u)
				own[workloadOf(u, ids[i])] = true
			}
		}
		if len(refused) == 0 {
			continue
		}
		// The pods the namespace admitted in the window before the first
		// refusal (created then: the audit log's creates of generated
		// names do not name them), by workload.
		admitted := map[string]int{}
		for i, u := range units {
			if u.Unborn || u.Namespace != r.ns || u.Created.Before(since) || !u.Created.Before(r.first) {
				continue
			}
			if w := workloadOf(u, ids[i]); w != "" && !own[w] {
				admitted[w]++
			}
		}
		workloads := make([]string, 0, len(admitted))
		for w := range admitted {
			workloads = append(workloads, w)
		}
		sort.Strings(workloads)
		for _, w := range workloads {
			sp, err := arrivalOf(ctx, s, w, since, r.first)
			if err != nil {
				return nil, err
			}
			if sp == nil {
				continue // it came before the window: no change now
			}
			sp.preemptor, sp.quota = false, true
			for _, u := range refused {
				sp.reached[u] = true
			}
			sp.Why = fmt.Sprintf("created by %s; its %d pods, admitted in %s before the first refusal, used the room of the quota %d pods were then refused for",
				orUnknown(sp.By), admitted[w], r.ns, len(refused))
			out = append(out, sp)
		}
	}
	return out, nil
}
