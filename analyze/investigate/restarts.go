package investigate

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/outcome"
)

// An apiserver restart breaks every watch at once: every informer of every
// client lists again when the apiserver is back. It is a candidate trigger
// of failures that are load-shaped (throttled, timed out, refused), and of
// no others. It reaches every unit that was running through it, bad or
// good alike, so the contrast of bad and good units says nothing of it;
// what speaks for it is time. Units that ran without failing from their
// start until the restart, and failed soon after the apiserver was back,
// place their onset in the restart's aftermath: were the onset unrelated,
// it would fall anywhere in the span the units ran, and within d of the
// restart with probability d / span. That is the restart's p-value, and a
// workload's arrival long before (a "created" suspect) is then the
// condition, not the trigger: its units ran through the arrival unharmed.

// restartSuspects are the apiserver's restarts that began before until
// (the first bad): its informers may start a little after the first
// failures it causes.
func restartSuspects(ctx context.Context, s Store, units []*outcome.Unit, since, until time.Time) ([]*Suspect, error) {
	rs, err := controlplane.Restarts(ctx, s, since, until.Add(time.Minute))
	if err != nil {
		return nil, err
	}
	var out []*Suspect
	for i := range rs {
		r := rs[i]
		if !r.LastServed.Before(until) {
			continue
		}
		sp := &Suspect{Ref: r.Component, Dimension: "restart", To: "restarted", At: r.LastServed, Kind: "change",
			Run: r.Evidence.Run, Line: r.Evidence.Line, restart: &r, reached: map[*outcome.Unit]bool{},
			Why: fmt.Sprintf("the apiserver served nothing for %s, then %d of its informers started (its own start)",
				r.Up.Sub(r.LastServed).Round(time.Millisecond), r.Informers)}
		for _, u := range units {
			if u.Created.Before(r.LastServed) && (!u.Bad() || u.BadAt.After(r.LastServed)) {
				sp.reached[u] = true // running through it
			}
		}
		out = append(out, sp)
	}
	return out, nil
}

// restartTiming is the chance that the bad units' onset falls as close
// after the restart as it does, were it unrelated: the time from the
// apiserver's return to the first bad, over the time the reached bad units
// had run before it.
func restartTiming(units []*outcome.Unit, sp *Suspect, firstBad time.Time) (p float64, ran time.Duration) {
	var start time.Time
	for u := range sp.reached {
		if u.Bad() && (start.IsZero() || u.Created.Before(start)) {
			start = u.Created
		}
	}
	if start.IsZero() {
		return 1, 0
	}
	ran = firstBad.Sub(start)
	d := firstBad.Sub(sp.restart.Up)
	if ran <= 0 {
		return 1, 0
	}
	if d < 0 {
		d = 0
	}
	return min(1, float64(d)/float64(ran)), ran
}

// restartsScored scores the restart suspects among all by their timing
// (restartTiming) and drops them when the failures are not load-shaped.
// It returns the rest, and the best restart's p-value and time (zero when
// none stands) for the arrivals before it.
func restartsScored(all []*scored, units []*outcome.Unit, firstBad time.Time, shaped bool) ([]*scored, float64, time.Time) {
	best, at := 1.0, time.Time{}
	kept := all[:0]
	for _, x := range all {
		if x.sp.restart == nil {
			kept = append(kept, x)
			continue
		}
		if !shaped {
			continue // a restart is a trigger of load, and these failures are not load's
		}
		p, ran := restartTiming(units, &x.sp, firstBad)
		n := float64(x.sup.badHold)
		x.base = 0
		if x.sup.bad > 0 {
			x.base = n / float64(x.sup.bad) * (1 - p) * n / (n + 1)
		}
		x.why = fmt.Sprintf("%d of %d bad units ran through it; back %s before the first bad, after they had run %s without failing; p=%.2g by chance",
			x.sup.badHold, x.sup.bad, ago(x.sp.restart.Up, firstBad), ran.Round(time.Second), p)
		if p < best {
			best, at = p, x.sp.At
		}
		kept = append(kept, x)
	}
	return kept, best, at
}
