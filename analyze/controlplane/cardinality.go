package controlplane

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/timeline"
)

// cardinality counts the users, user agents and classes, and warns when
// users keep appearing in the second half of the window.
func cardinality(classes []*Class, st *timeline.RequestStats, first, last time.Time) Cardinality {
	mid := first.Add(last.Sub(first) / 2).Unix()
	firstSeen := map[string]int64{}
	for _, cl := range st.Clients {
		if t, ok := firstSeen[cl.User]; !ok || cl.Minute < t {
			firstSeen[cl.User] = cl.Minute
		}
	}
	uas := map[string]bool{}
	for _, c := range classes {
		uas[c.Client] = true
	}
	card := Cardinality{Users: len(firstSeen), UserAgents: len(uas), Classes: len(classes)}
	for _, t := range firstSeen {
		if t < mid {
			card.UsersFirst++
		} else {
			card.UsersLast++
		}
	}
	if card.UsersLast > 100 && card.UsersLast > card.UsersFirst/2 {
		card.Warning = fmt.Sprintf("%d users first seen in the second half of the window (%d in the first): an identity per pod or per run grows without bound; label telemetry by class (system:serviceaccount:NS:*), not by user",
			card.UsersLast, card.UsersFirst)
	}
	return card
}
