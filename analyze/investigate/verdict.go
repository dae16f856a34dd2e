package investigate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/faultline/faultline/analyze/gang"
	"github.com/faultline/faultline/analyze/outcome"
)

// Verdicts.
const (
	VerdictCause   = "cause"
	VerdictNoCause = "no-confident-cause"
)

// Confident is the confidence from which a suspect is named the cause:
// more likely than not, once its evidence is discounted for chance, for
// how few bad units show it and for the suspects that explain the same
// units as well (two equal competitors can never both be confident).
const Confident = 0.5

// decide sets the verdict. A cause is confident when the leading suspect
// is (Confident), or when a gang job's first rank failed for a reason none
// of its cascade shares (the first death explains the rest, whatever
// killed it). Otherwise the report says so and what would help.
func decide(rep *Report) {
	switch {
	case rep.Boundary == nil:
		rep.Verdict, rep.VerdictWhy = VerdictNoCause, "nothing went bad in the evidence"
		rep.Next = []string{"widen the window (--since) or say what bad means (--bad)", "ingest more evidence: events, object dumps, another audit log (faultline sources)"}
		return
	case len(rep.Changes) > 0 && rep.Changes[0].Confidence >= Confident && !(rep.Changes[0].Dimension == "created" && gangExplains(rep)) &&
		!(rep.Changes[0].host != nil && gangHost(rep)):
		top := rep.Changes[0]
		rep.Verdict = VerdictCause
		what := fmt.Sprintf("%s %s changed", top.Ref, top.Dimension)
		switch top.Dimension {
		case "created":
			what = top.Ref + " arrived" // a workload, and its load
			if top.admits != "" || top.netpol || top.throttles || top.budget {
				what = top.Ref + " was created" // a rule of what may run, or reach
			}
		case "restart":
			what = top.Ref + " restarted"
		case "deleted":
			what = top.Ref + " was deleted"
		case "spec":
			if top.verb != "" {
				what = fmt.Sprintf("%s was %s (%s)", top.Ref, pastTense(top.verb), "its content is not in the evidence")
			}
		}
		rep.VerdictWhy = fmt.Sprintf("%s (confidence %.2f: %s)", what, top.Confidence, top.ConfidenceWhy)
		return
	}
	for _, g := range rep.Gangs {
		if h, ok := g.HostCause(); ok && g.Cascade > 0 {
			rep.Verdict = VerdictCause
			rep.VerdictWhy = fmt.Sprintf("Node/%s logged %s %s before %s (rank %s) failed first (%s); %d ranks of %s followed (the cascade); a coincidence this close has chance %.2g",
				h.Node, h.What(), h.Lead.Round(1e6), g.First.Ref, rankOrUnknown(g.First.Rank), g.First.Reason, g.Cascade, g.Owner, h.Chance)
			return
		}
		if g.Distinct && g.Cascade > 0 {
			rep.Verdict = VerdictCause
			rep.VerdictWhy = fmt.Sprintf("%s failed first (%s) %s before %d ranks of %s followed with other reasons",
				g.First.Ref, g.First.Reason, g.Lead.Round(1e6), g.Cascade, g.Owner)
			return
		}
	}
	rep.Verdict = VerdictNoCause
	switch {
	case rep.Units.Bad < 2:
		rep.VerdictWhy = fmt.Sprintf("%d unit went bad after the boundary: one failure is no pattern", rep.Units.Bad)
	case len(rep.Changes) == 0:
		rep.VerdictWhy = fmt.Sprintf("%d units went bad, but no change of what they ran with precedes it", rep.Units.Bad)
	default:
		top := rep.Changes[0]
		rep.VerdictWhy = fmt.Sprintf("the leading suspect, %s %s, has confidence %.2f (%s)", top.Ref, top.Dimension, top.Confidence, top.ConfidenceWhy)
	}
	var next []string
	if shared := sharedFailure(rep.units, rep.Schedulers, rep.Controllers); shared != "" {
		next = append(next, shared)
	}
	if set := admittedHint(rep); set != "" {
		next = append(next, set)
	}
	if rep.Boundary != nil {
		next = append(next, fmt.Sprintf("mark instants you know: faultline bisect good|bad TIME (the window is %s .. %s)",
			rep.Boundary.LastGood.UTC().Format("15:04:05"), rep.Boundary.FirstBad.UTC().Format("15:04:05")))
	}
	next = append(next, "look at load: faultline controlplane", "widen the window (--since) or add evidence: object dumps, events, versions (faultline sources)")
	rep.Next = next
}

// confidentChange says whether a suspect may drive mitigation.
func confidentChange(sp Suspect) bool { return sp.Confidence >= Confident }

// gangExplains says whether a gang job's first rank failed for a reason of
// its own and took the others with it: then the job's arrival explains
// nothing its first death does not.
func gangExplains(rep *Report) bool {
	for _, g := range rep.Gangs {
		if gangCause(g) {
			return true
		}
	}
	return false
}

// gangCause says whether a gang's first failure explains its cascade: it
// failed for a reason of its own, or its node logged a fault that explains
// it (gang.HostError.Explains).
func gangCause(g gang.Finding) bool {
	_, host := g.HostCause()
	return g.Cascade > 0 && (g.Distinct || host)
}

// gangHost says whether a gang's first rank's node logged the fault that
// explains it: the gang's story (which rank, which node, the cascade) then
// tells the cause better than the fault's suspect alone.
func gangHost(rep *Report) bool {
	return slices.ContainsFunc(rep.Gangs, func(g gang.Finding) bool {
		_, ok := g.HostCause()
		return ok && g.Cascade > 0
	})
}

// rankOrUnknown is a rank for a sentence.
func rankOrUnknown(r string) string {
	if r == "" {
		return "unknown"
	}
	return r
}

// sharedFailure says how most bad units failed, when more than half of
// them (two at least) failed alike, and where to look when no change in
// the evidence explains it, a cause outside the cluster's objects that
// leaves no change behind: pulls that fail name the registry; pods that
// no scheduler attended to name the scheduler, and when it stopped
// (idle). "" otherwise.
func sharedFailure(units []*outcome.Unit, idle []outcome.SchedulerIdle, stalled []outcome.ControllerIdle) string {
	count := map[string]int{}
	example := map[string]*outcome.Unit{}
	bad := 0
	for _, u := range ownFailures(units) {
		if u.Reason == "" {
			continue
		}
		bad++
		count[u.Reason]++
		if example[u.Reason] == nil {
			example[u.Reason] = u
		}
	}
	top := ""
	for r, n := range count {
		if n > count[top] || (n == count[top] && r < top) {
			top = r
		}
	}
	if n := count[top]; n < 2 || 2*n <= bad {
		return ""
	}
	u := example[top]
	what := fmt.Sprintf("%d of %d bad units failed alike: %s (as %s)", count[top], bad, top, u.Ref)
	if host := pullHost(u); host != "" {
		what += fmt.Sprintf(", pulling from %s: look at that registry, which no change here explains", host)
	}
	if top == outcome.NotScheduled && len(idle) > 0 {
		what += ", " + idleScheduler(idle[0]) + ": look at that scheduler (does it run? its log), which no change here explains"
	}
	if top == outcome.NotObserved && len(stalled) > 0 {
		what += ", " + idleController(stalled[0]) + ": look at that controller (does it run? its log), which no change here explains"
	}
	return what
}

// idleScheduler says which scheduler pods waited for, and since when it
// has placed and judged none.
func idleScheduler(sp outcome.SchedulerIdle) string {
	return idleSince(sp.Scheduler, "placed and judged no pod", sp.IdleSpan)
}

// idleController says which controller changes waited for (the user that
// writes their status), and since when it has made no request.
func idleController(sp outcome.ControllerIdle) string {
	return idleSince(sp.Controller, "made no request", sp.IdleSpan)
}

// idleSince says what waited for who, which did nothing (did) through
// the span: from its last work until the span's end, or since its last
// work when ongoing.
func idleSince(who, did string, sp outcome.IdleSpan) string {
	const clock = "15:04:05"
	switch {
	case sp.LastWork.IsZero():
		return fmt.Sprintf("waiting for %s, which %s in the evidence", who, did)
	case sp.Ongoing:
		return fmt.Sprintf("waiting for %s, which has %s since %s", who, did, sp.LastWork.UTC().Format(clock)) // "placed", "made": participles too
	}
	return fmt.Sprintf("waiting for %s, which %s from %s until %s", who, did, sp.LastWork.UTC().Format(clock), sp.Until.UTC().Format(clock))
}

// pullHost is the registry a unit that failed pulling its image pulled
// from, when its failure says so ("ErrImagePull", "ImagePullBackOff").
func pullHost(u *outcome.Unit) string {
	if u.Reason != "ErrImagePull" && u.Reason != "ImagePullBackOff" {
		return ""
	}
	_, rest, ok := strings.Cut(u.Message, `image "`)
	if !ok {
		return ""
	}
	ref, _, _ := strings.Cut(rest, `"`)
	host, _, ok := strings.Cut(ref, "/")
	if !ok || !strings.ContainsAny(host, ".:") && host != "localhost" {
		return "docker.io" // a reference without a registry host
	}
	return host
}
