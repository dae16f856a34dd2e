package investigate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/outcome"
)

// LoadEvidence is the control-plane burst behind a load-shaped cause: the
// heaviest burst by the slice's own clients (its namespace's
// ServiceAccounts) around the incident, as faultline controlplane ranks
// them (by the load they put on the apiserver and etcd).
type LoadEvidence struct {
	Class    string    `json:"class"`  // verb resource (scope)
	Client   string    `json:"client"` // user agent
	User     string    `json:"user"`   // folded: system:serviceaccount:NS:*
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	PeakRps  float64   `json:"peakRps"`
	Baseline float64   `json:"baselineRps"`
	Load     string    `json:"load"` // how the load is made, in one line
	Detail   string    `json:"detail"`
}

// apiLoad is what the apiserver's request rollup measured from the
// clients of the slice's namespace: their bursts, and their requests per
// second (Unix second -> requests received).
type apiLoad struct {
	bursts  []controlplane.Burst
	seconds map[int64]int64
	// refusedAfter is, per arrival (its time's Unix nanoseconds), the
	// first request of the namespace's clients after it that the
	// apiserver shed (429) or failed (5xx).
	refusedAfter map[int64]time.Time
}

// after says whether a burst of the namespace's clients ran after at; a
// nil apiLoad (nothing measured) does not deny it.
func (l *apiLoad) after(at time.Time) bool {
	if l == nil {
		return true
	}
	for _, b := range l.bursts {
		if !b.End.Before(at) {
			return true
		}
	}
	return false
}

// A load that was already good. Load breaks what serves it when it
// reaches a level the server cannot carry: the failures come as it rises.
// When the namespace's clients had sustained the rate they ran at just
// before the first failure (heldWindow) for a while (steadyWindow) after
// the arrival, with no failure, that level was known good: the load did
// not rise into the failures, and something else changed (what serves
// it: a slower etcd, a narrower priority level). The arrival is then the
// condition, not the cause. The first failure is the first bad unit's, or
// the apiserver's first refusal of those clients if earlier: a load shed
// since it began was never good, however long its units took to give up.
// "The same rate" allows riseFactor: Poisson noise over heldWindow is
// under 15 % at the 10 requests a second a burst worth the name makes,
// and a load that breaks a server rises several times over.
const (
	heldWindow   = 5 * time.Second
	steadyWindow = 10 * time.Second
	riseFactor   = 1.25
)

// heldBefore says whether the namespace's clients had run, for
// steadyWindow after at and before the failure's window (the heldWindow
// that ends with the first failure's second), at a rate of at least the
// one they ran at in that window (less riseFactor), and how long before
// the first failure that steady stretch ended. A nil apiLoad (nothing
// measured) says no.
func (l *apiLoad) heldBefore(at, firstBad time.Time) (time.Duration, bool) {
	if l == nil || len(l.seconds) == 0 || at.IsZero() {
		return 0, false
	}
	if t, ok := l.refusedAfter[at.UnixNano()]; ok && t.Before(firstBad) {
		firstBad = t
	}
	rate := func(from time.Time, d time.Duration) float64 {
		var n int64
		for s := from.Unix(); s < from.Add(d).Unix(); s++ {
			n += l.seconds[s]
		}
		return float64(n) / d.Seconds()
	}
	// The recent window ends with the second of the first failure: the
	// requests received in it are part of the load that failed.
	recentFrom := firstBad.Truncate(time.Second).Add(time.Second - heldWindow)
	recent := rate(recentFrom, heldWindow)
	if recent == 0 {
		return 0, false
	}
	last := recentFrom.Add(-steadyWindow)
	for from := at.Truncate(time.Second).Add(time.Second); !from.After(last); from = from.Add(time.Second) {
		if rate(from, steadyWindow)*riseFactor >= recent {
			return firstBad.Sub(from.Add(steadyWindow)), true
		}
	}
	return 0, false
}

// measuredLoad reads the bursts of the clients of namespace ns (its
// ServiceAccounts) in [since - 1 min, until + 1 min], when a workload's
// arrival is among the candidates, the bad units failed the way load
// does, and the store keeps a rollup that holds requests: else nil, for
// nothing measured.
func measuredLoad(ctx context.Context, s Store, cands []*Suspect, units []*outcome.Unit, ns string, since, until time.Time) (*apiLoad, error) {
	cs, ok := s.(controlplane.Store)
	if shaped, _ := loadShaped(units); !ok || !shaped || ns == "" ||
		!slices.ContainsFunc(cands, func(sp *Suspect) bool { return sp.Dimension == "created" && sp.reached == nil }) {
		return nil, nil
	}
	prefix := "system:serviceaccount:" + ns + ":"
	all, err := controlplane.Analyze(ctx, cs, controlplane.Options{Since: since.Add(-time.Minute), Until: until.Add(time.Minute),
		NoSlow: true})
	if err != nil {
		return nil, fmt.Errorf("control-plane load: %w", err)
	}
	if all.Requests == 0 {
		return nil, nil // no request evidence: nothing measured
	}
	l := &apiLoad{seconds: map[int64]int64{}}
	for _, b := range all.Bursts {
		if strings.HasPrefix(b.Class.User, prefix) {
			l.bursts = append(l.bursts, b)
		}
	}
	for i := range all.Classes { // their requests per second, as Analyze read them
		if c := &all.Classes[i]; strings.HasPrefix(c.User, prefix) {
			for _, x := range c.Series() {
				l.seconds[x.Sec] += x.Count
			}
		}
	}
	l.refusedAfter = map[int64]time.Time{}
	for _, sp := range cands {
		if sp.Dimension != "created" || sp.reached != nil || sp.At.IsZero() {
			continue
		}
		r, err := firstRecord(ctx, s, fmt.Sprintf(`user.startsWith(%q) && (code == 429 || code >= 500)`, prefix), sp.At, until.Add(time.Minute), false)
		if err != nil {
			return nil, fmt.Errorf("control-plane load: %w", err)
		}
		if r != nil {
			l.refusedAfter[sp.At.UnixNano()] = r.Time
		}
	}
	return l, nil
}

// loadEvidence attaches the burst to the leading suspect when it is a
// workload's arrival or an apiserver restart (the causes of load-shaped
// failures). Only a store that keeps the request rollup
// (controlplane.Store) can show it.
func loadEvidence(ctx context.Context, s Store, rep *Report) error {
	cs, ok := s.(controlplane.Store)
	if !ok || len(rep.Changes) == 0 || rep.Boundary == nil || rep.ns == "" {
		return nil
	}
	top := &rep.Changes[0]
	if top.Dimension != "created" && top.Dimension != "restart" {
		return nil
	}
	since := top.At.Add(-time.Minute)
	until := rep.Boundary.IncidentEnd.Add(time.Minute)
	prefix := "system:serviceaccount:" + rep.ns + ":"
	cp, err := controlplane.Analyze(ctx, cs, controlplane.Options{Since: since, Until: until,
		Where: func(c *controlplane.Class) bool { return strings.HasPrefix(c.User, prefix) }})
	if err != nil {
		return fmt.Errorf("control-plane evidence: %w", err)
	}
	for _, b := range cp.Bursts {
		if b.End.Before(top.At) {
			continue
		}
		class, _, _ := strings.Cut(b.Class.Key(), " by ")
		top.Load = &LoadEvidence{Class: class, Client: b.Class.Client, User: b.Class.User, Start: b.Start, End: b.End,
			PeakRps: b.PeakRps, Baseline: b.BaselineRps, Load: b.Load.String(),
			Detail: fmt.Sprintf("faultline controlplane --since %s --until %s", since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))}
		return nil
	}
	return nil
}

// slowEvidence reads the episode of slow requests to etcd under way when the units
// first failed (controlplane.SlowAt). Where it is no queue's (no load of
// the moment), it is the server's doing, and with no confident cause it
// is the first thing to look at: the next step says so.
func slowEvidence(ctx context.Context, s Store, rep *Report) error {
	if rep.Boundary == nil || rep.Boundary.FirstBad.IsZero() {
		return nil
	}
	sl, err := rep.slow.at(ctx, s, rep.Boundary.FirstBad)
	if err != nil {
		return fmt.Errorf("slow requests to etcd: %w", err)
	}
	if sl == nil || sl.Where == "queue" {
		return nil
	}
	rep.Slow = sl
	if rep.Verdict == VerdictNoCause {
		what := map[string]string{"etcd": "etcd slowed", "apiserver": "the apiserver slowed"}[sl.Where]
		how := map[string]string{"etcd": "; not the watch cache", "apiserver": "; its watch cache too"}[sl.Where]
		if what == "" {
			what = "etcd or the apiserver slowed"
		}
		rep.Next = append([]string{fmt.Sprintf("%s from %s (%d clients%s): faultline controlplane",
			what, sl.Start.UTC().Format(time.TimeOnly), sl.Clients, how)}, rep.Next...)
	}
	return nil
}

// slowRead is controlplane.SlowAt of one instant, read beside the rest of
// the investigation once the first bad is known: a storm's minutes hold
// many slow requests (108k on the 10 M-line benchmark log), and the
// store answers two readers at once.
type slowRead struct {
	when time.Time
	done chan struct{}
	slow *controlplane.Slow
	err  error
}

// readSlowAt starts reading the episode under way at when, or returns nil
// for a store without the rollup.
func readSlowAt(ctx context.Context, s Store, when time.Time) *slowRead {
	cs, ok := s.(controlplane.Store)
	if !ok || when.IsZero() {
		return nil
	}
	r := &slowRead{when: when, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.slow, r.err = controlplane.SlowAt(ctx, cs, when)
	}()
	return r
}

// at is the episode under way at when: the one read beside, if it was
// read for that instant, else one read now.
func (r *slowRead) at(ctx context.Context, s Store, when time.Time) (*controlplane.Slow, error) {
	if r == nil || !r.when.Equal(when) {
		if r = readSlowAt(ctx, s, when); r == nil {
			return nil, nil
		}
	}
	<-r.done
	return r.slow, r.err
}
