package investigate

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/outcome"
)

// Scoring a suspect. A change explains a failure when the units that went
// bad hold it and comparable units that stayed good do not: the
// investigator's contingency table. For each suspect:
//
//	                 holds the new value   does not
//	bad units               a               bad - a
//	comparable good         b               good - b
//
// Its strength is the share of bad units that hold it times the share of
// comparable good units that lack it; how unlikely that split is by chance
// is Fisher's exact test (one-sided: the bad units hold it more often);
// and a handful of bad units cannot establish a pattern however clean it
// looks, so the evidence of n bad units counts n/(n+1). Comparable good
// units are those of the bad units' population: the same namespace, when
// it holds good units at all, else every good unit in scope.

// support is how a suspect's new value is held across the units.
type support struct {
	badHold, bad   int
	goodHold, good int
	// chance, when set, is the chance of a coincidence in time that the
	// support rests on as well (hosterrors.go): the p-value is no larger.
	chance float64
}

// strength is the share of bad units holding the value times the share of
// comparable good units lacking it (one half when there is no good unit
// to compare with: the contrast is unknown, not absent).
func (s support) strength() float64 {
	if s.bad == 0 {
		return 0
	}
	lack := 0.5
	if s.good > 0 {
		lack = 1 - float64(s.goodHold)/float64(s.good)
	}
	return float64(s.badHold) / float64(s.bad) * lack
}

// pValue is the one-sided Fisher exact test that bad units hold the value
// at least as often as they do, were holding it independent of going bad.
func (s support) pValue() float64 {
	if s.chance > 0 && s.badHold > 0 {
		return min(s.chance, s.fisher())
	}
	return s.fisher()
}

// fisher is the one-sided Fisher exact test of the contingency table.
func (s support) fisher() float64 {
	if s.good == 0 {
		return 1
	}
	n := s.bad + s.good
	k := s.badHold + s.goodHold // units holding the value
	p := 0.0
	for a := s.badHold; a <= min(k, s.bad); a++ {
		p += math.Exp(lchoose(s.bad, a) + lchoose(s.good, k-a) - lchoose(n, k))
	}
	return min(1, p)
}

func lchoose(n, k int) float64 {
	if k < 0 || k > n {
		return math.Inf(-1)
	}
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// confidence is the evidence that the suspect is the cause, in [0, 1]:
// its strength, discounted by the chance of the split and by how few bad
// units show it, and shared with the competing suspects that explain the
// same units as well (two changes at once cannot be told apart here).
func (s support) confidence(competitors int) float64 {
	n := float64(s.bad)
	c := s.strength() * (1 - s.pValue()) * n / (n + 1)
	return c / float64(1+competitors)
}

// reason says in one line what the confidence rests on.
func (s support) reason(competitors int) string {
	good := fmt.Sprintf("%d of %d comparable good units", s.goodHold, s.good)
	if s.good == 0 {
		good = "no comparable good unit to contrast"
	}
	return fmt.Sprintf("%d of %d bad units hold it, %s; p=%.2g by chance", s.badHold, s.bad, good, s.pValue()) + competing(competitors)
}

// competing says how many other changes explain the same units.
func competing(competitors int) string {
	switch competitors {
	case 0:
		return ""
	case 1:
		return "; 1 other change explains the same units"
	}
	return fmt.Sprintf("; %d other changes explain the same units", competitors)
}

// population is the units a suspect is judged over: the bad units in
// scope, and the good units of their namespace (all good units when their
// namespace holds none).
type population struct {
	bad, good []int // indexes into units
}

func populationOf(units []*outcome.Unit, ns string) population {
	var p population
	var allGood []int
	for i, u := range units {
		switch {
		case u.Bad():
			p.bad = append(p.bad, i)
		case u.Good():
			allGood = append(allGood, i)
			if u.Namespace == ns {
				p.good = append(p.good, i)
			}
		}
	}
	if len(p.good) == 0 {
		p.good = allGood
	}
	return p
}

// supportOf counts who holds the new value of a dimension. A unit holds
// what it started with; a bad unit that reads a ConfigMap or Secret also
// holds a change made to it while it ran, before it went bad (mounted
// config is updated in place, and programs reload it), while a good unit
// that started before the change never holds it.
func (p population) supportOf(units []*outcome.Unit, ids []map[string]identity.Dimension, dim, to string, at time.Time) support {
	s := support{bad: len(p.bad), good: len(p.good)}
	live := strings.HasPrefix(dim, "configmap/") || strings.HasPrefix(dim, "secret/")
	for _, i := range p.bad {
		d, ok := ids[i][dim]
		switch {
		case ok && d.Value == to:
			s.badHold++
		case ok && live && !at.IsZero() && !at.Before(units[i].Created) && at.Before(units[i].BadAt):
			s.badHold++
		}
	}
	for _, i := range p.good {
		if d, ok := ids[i][dim]; ok && d.Value == to {
			s.goodHold++
		}
	}
	return s
}

// supportOfOwner counts whose units a created owner is.
func (p population) supportOfOwner(units []*outcome.Unit, ids []map[string]identity.Dimension, kind, name string) support {
	dim := "owner/" + kind
	s := support{bad: len(p.bad), good: len(p.good)}
	for _, i := range p.bad {
		if ids[i][dim].Value == name {
			s.badHold++
		}
	}
	for _, i := range p.good {
		if ids[i][dim].Value == name {
			s.goodHold++
		}
	}
	return s
}

// carrier says whether a dimension only carries a change to the pods (a
// new template hash, a generation, a ReplicaSet) rather than being what
// they ran with. When a content change and its carrier explain the same
// units, the content is the cause and the carrier the way it arrived.
func carrier(dim string) bool {
	return dim == "owner.podTemplateHash" || dim == "owner.controllerRevision" ||
		strings.HasSuffix(dim, ".generation") || strings.HasPrefix(dim, "owner/")
}

// ownFailures are the bad units that failed of themselves, not killed by
// their Job as it failed (outcome.Unit.Killed): how they failed says how
// things fail. When every bad unit was killed, they are all there is.
func ownFailures(units []*outcome.Unit) []*outcome.Unit {
	var own, killed []*outcome.Unit
	for _, u := range units {
		switch {
		case !u.Bad():
		case u.Killed:
			killed = append(killed, u)
		default:
			own = append(own, u)
		}
	}
	if len(own) == 0 {
		return killed
	}
	return own
}

// loadShaped says whether the bad units failed the way load makes things
// fail: throttled, timed out, refused by an overloaded apiserver (an image
// pull only when the registry throttled it). Only
// then is a workload's arrival, rather than what its units ran with, a
// candidate cause.
func loadShaped(units []*outcome.Unit) (bool, int) {
	n, load := 0, 0
	for _, u := range ownFailures(units) {
		n++
		m := strings.ToLower(u.Message + " " + u.Reason)
		words := []string{"too many requests", "timed out", "timeout", "deadline exceeded", "429", "throttl", "connection refused", "etcdserver"}
		if u.Reason == "ErrImagePull" || u.Reason == "ImagePullBackOff" {
			// A pull goes to the registry, not to the cluster's shared
			// services: a timeout or a refusal there says the registry
			// (or the way to it) is down for everyone, which no arrival
			// makes; only its own throttling says it was asked too much.
			words = []string{"too many requests", "toomanyrequests", "429", "rate limit", "throttl"}
		}
		for _, w := range words {
			if strings.Contains(m, w) {
				load++
				break
			}
		}
	}
	return n > 0 && load*2 >= n, load
}

// supportOfNodeChange counts who a change of nodes' state reached: a bad
// unit on one of the nodes when the change came while it ran, before it
// went bad (a NoExecute taint, a cordon and drain act on running pods); a
// good unit on one of them, or on a node the same act changed
// (goodNodeAt), seen good at or after the change: one that started there
// after it, or that it found running and that stood good after it
// (addOnGoodNodes).
func (p population) supportOfNodeChange(units []*outcome.Unit, ids []map[string]identity.Dimension, sp *Suspect) support {
	set := map[string]bool{}
	for _, r := range sp.refs {
		set[r] = true
	}
	// When the change came to a unit's node: each node's own time when
	// nodes made it one after another, else the change's.
	when := func(i int) (time.Time, bool) {
		ref := "Node/" + ids[i]["node"].Value
		if !set[ref] {
			return time.Time{}, false
		}
		if t, ok := sp.nodeAt[ref]; ok {
			return t, true
		}
		return sp.At, true
	}
	s := support{bad: len(p.bad), good: len(p.good)}
	for _, i := range p.bad {
		if at, on := when(i); on && !at.Before(units[i].Created) && !at.After(units[i].BadAt) {
			s.badHold++
		}
	}
	for _, i := range p.good {
		at, on := when(i)
		if !on {
			at, on = sp.goodNodeAt["Node/"+ids[i]["node"].Value]
		}
		if on && (units[i].Created.After(at) || !units[i].LastGood.Before(at)) {
			s.goodHold++
		}
	}
	return s
}

// supportOfSuspect counts who holds a change, by how the change reaches a
// unit: a node's condition, the nodes it ran on; a write whose content is
// not in the evidence, its readers since; a taint or drain, the units it
// found running; any other dimension, its value (supportOf).
func (p population) supportOfSuspect(units []*outcome.Unit, ids []map[string]identity.Dimension, sp *Suspect) support {
	switch {
	case sp.host != nil:
		return p.supportOfHost(units, sp)
	case sp.reached != nil:
		return p.supportOfReach(units, sp.reached)
	case nodeCondition(sp.Dimension):
		return p.supportOfNodes(ids, sp.refs)
	case sp.unread:
		return p.supportOfWrite(units, ids, sp.Dimension, sp.At)
	case (sp.Dimension == "node.taints" || sp.Dimension == "node.unschedulable") && sp.Kind == "change":
		return p.supportOfNodeChange(units, ids, sp)
	}
	at := sp.At
	if sp.Kind != "change" {
		at = time.Time{} // a difference was not seen happening: no exposure
	}
	dim := sp.Dimension
	if sp.holds != "" {
		dim = sp.holds
	}
	return p.supportOf(units, ids, dim, sp.To, at)
}

// supportOfReach counts the units the evidence shows a change reached
// (a ServiceAccount denied after an RBAC write, a pod that could no longer
// be placed after a node change). A good unit it reached is evidence
// against it: reached, yet it did not fail.
func (p population) supportOfReach(units []*outcome.Unit, reached map[*outcome.Unit]bool) support {
	s := support{bad: len(p.bad), good: len(p.good)}
	for _, i := range p.bad {
		if reached[units[i]] {
			s.badHold++
		}
	}
	for _, i := range p.good {
		if reached[units[i]] {
			s.goodHold++
		}
	}
	return s
}
