package alerts

import (
	"time"
)

// Verdicts of a backtest.
const (
	VerdictEarly  = "early"   // fired before the first bad observation
	VerdictInTime = "in-time" // within one persistence (at least one interval) after it
	VerdictLate   = "late"
	VerdictMissed = "missed"
)

// Backtest is the replay of a definition file over an incident.
type Backtest struct {
	Start     time.Time      `json:"start"`
	End       time.Time      `json:"end"`
	LastGood  time.Time      `json:"lastGood"`
	FirstBad  time.Time      `json:"firstBad"`
	Noticed   time.Time      `json:"noticed,omitzero"`
	NoticedBy string         `json:"noticedBy,omitempty"`
	Interval  Duration       `json:"interval"`
	Alerts    []AlertOutcome `json:"alerts"`
}

// AlertOutcome is what one definition would have done.
type AlertOutcome struct {
	Name    string   `json:"name"`
	Max     float64  `json:"max"`
	Min     *float64 `json:"min,omitempty"`
	For     Duration `json:"for"`
	Firings []Firing `json:"firings"`
	// FalsePositives are the firings that began in the known-good window
	// (at or before the last known-good instant).
	FalsePositives []Firing `json:"falsePositives"`
	// Fired is the first firing after the last known-good instant.
	Fired *time.Time `json:"fired,omitempty"`
	// Lead is FirstBad - Fired in seconds (positive: before the first bad
	// observation); LeadNoticed is Noticed - Fired, where known.
	Lead        *float64 `json:"leadSeconds,omitempty"`
	LeadNoticed *float64 `json:"leadNoticedSeconds,omitempty"`
	Verdict     string   `json:"verdict"`
	// PeakAfter is the signal's largest value from the boundary on.
	PeakAfter float64 `json:"peakAfter"`
}

// Run replays every definition of f over the evidence.
func (ev *Evidence) Run(f *File) (*Backtest, error) {
	step := f.Interval.D()
	bt := &Backtest{Start: ev.Start, End: ev.End, LastGood: ev.LastGood, FirstBad: ev.FirstBad, Noticed: ev.Noticed,
		NoticedBy: ev.NoticedBy, Interval: f.Interval, Alerts: []AlertOutcome{}}
	for i := range f.Alerts {
		d := &f.Alerts[i]
		pts, err := ev.Evaluate(d, step)
		if err != nil {
			return nil, err
		}
		bt.Alerts = append(bt.Alerts, ev.outcome(d, pts, step))
	}
	return bt, nil
}

func (ev *Evidence) outcome(d *Definition, pts []Point, step time.Duration) AlertOutcome {
	o := AlertOutcome{Name: d.Name, Max: d.Normal.Max, Min: d.Normal.Min, For: d.For, FalsePositives: []Firing{}}
	o.Firings = Fire(pts, d.Normal.Max, d.Normal.Min, d.For.D())
	if o.Firings == nil {
		o.Firings = []Firing{}
	}
	for _, p := range pts {
		if p.OK && !p.T.Before(ev.FirstBad) {
			o.PeakAfter = max(o.PeakAfter, round(p.V))
		}
	}
	for _, fi := range o.Firings {
		if !fi.Start.After(ev.LastGood) {
			o.FalsePositives = append(o.FalsePositives, fi)
			continue
		}
		if o.Fired == nil {
			t := fi.Start
			o.Fired = &t
		}
	}
	o.Verdict = VerdictMissed
	if o.Fired != nil {
		lead := ev.FirstBad.Sub(*o.Fired)
		o.Lead = seconds(lead)
		if !ev.Noticed.IsZero() {
			o.LeadNoticed = seconds(ev.Noticed.Sub(*o.Fired))
		}
		switch tol := max(d.For.D(), step); {
		case lead > 0:
			o.Verdict = VerdictEarly
		case -lead <= tol:
			o.Verdict = VerdictInTime
		default:
			o.Verdict = VerdictLate
		}
	}
	return o
}

// OK reports whether the alert fired in time with no false positive.
func (o *AlertOutcome) OK() bool {
	return len(o.FalsePositives) == 0 && (o.Verdict == VerdictEarly || o.Verdict == VerdictInTime)
}

func seconds(d time.Duration) *float64 {
	s := d.Seconds()
	return &s
}
