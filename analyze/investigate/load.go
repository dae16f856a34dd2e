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
// clients of the slice's namespace: their bursts.
type apiLoad struct {
	bursts []controlplane.Burst
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
	all, err := controlplane.Analyze(ctx, cs, controlplane.Options{Since: since.Add(-time.Minute), Until: until.Add(time.Minute)})
	if err != nil {
		return nil, fmt.Errorf("control-plane load: %w", err)
	}
	if all.Requests == 0 {
		return nil, nil // no request evidence: nothing measured
	}
	l := &apiLoad{}
	for _, b := range all.Bursts {
		if strings.HasPrefix(b.Class.User, prefix) {
			l.bursts = append(l.bursts, b)
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
