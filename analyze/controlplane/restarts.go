package controlplane

import (
	"context"
	"iter"
	"time"

	"github.com/faultline/faultline/timeline"
)

// Restarts of the apiserver, read from its own audit trail. An apiserver
// starts its informers through its loopback client ("system:apiserver"):
// it lists and watches a few dozen resources within a second or two of
// coming up, and at no other time together. Each informer re-opens its
// watch on its own after a random 5 to 10 minutes, so even 40 informers
// re-open one watch every 11 seconds on average, and minStartInformers of
// them within startSpread is a start, not chance (Poisson, mean 0.27:
// p < 1e-8). The first start in the evidence is
// where the evidence begins, not a restart: a restart is a start with
// requests served before it.

const (
	minStartInformers = 8
	startSpread       = 3 * time.Second
	// lookback is how far before a start its silence is looked for.
	lookback = time.Minute
	// silenceNats: a gap g at rate λ is a silence when exp(-λg) < 1e-6.
	silenceNats = 13.8
)

// Restart is an apiserver seen starting again inside the evidence.
type Restart struct {
	Component string `json:"component"` // "kube-apiserver"
	// LastServed is the last request served before the start (the old
	// process's last, or the last of another replica), Up the first of
	// the new process's own informers: the apiserver was away between.
	LastServed time.Time         `json:"lastServed"`
	Up         time.Time         `json:"up"`
	Informers  int               `json:"informers"` // resources its loopback client started to read
	Evidence   timeline.Evidence `json:"evidence"`  // the first of them
	Record     int64             `json:"record,omitempty"`
}

// RecordSource is what Restarts reads.
type RecordSource interface {
	Records(ctx context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error]
}

// Restarts finds the apiserver's restarts in [since, until).
func Restarts(ctx context.Context, s RecordSource, since, until time.Time) ([]Restart, error) {
	f, err := timeline.CompileFilter(`user == "system:apiserver" && verb in ["list", "watch"] && resource != ""`)
	if err != nil {
		return nil, err // a constant: a bug
	}
	type start struct {
		first *timeline.Record
		seen  map[string]bool // resources read
	}
	var starts []*start
	var cur *start
	for r, err := range s.Records(ctx, timeline.Query{Since: since, Until: until, Where: f}) {
		if err != nil {
			return nil, err
		}
		if cur == nil || r.Time.Sub(cur.first.Time) > startSpread {
			cur = &start{first: r, seen: map[string]bool{}}
			starts = append(starts, cur)
		}
		cur.seen[r.Object.Resource] = true
	}
	var out []Restart
	for _, st := range starts {
		if len(st.seen) < minStartInformers {
			continue
		}
		r, ok, err := restartBefore(ctx, s, st.first)
		if err != nil {
			return nil, err
		}
		if ok {
			r.Informers = len(st.seen)
			out = append(out, r)
		}
	}
	return out, nil
}

// restartBefore dates the start whose informers began at first. Its
// requests began after the silence it ended, if one precedes it: the
// longest gap between records in the lookback before it, when the traffic
// there makes a gap that long all but impossible by chance (no record in g
// at rate λ: exp(-λg) < 1e-6). Without a silence (another replica went on
// serving), the start is a restart only when requests were served for a
// while before it; otherwise the evidence begins with it.
func restartBefore(ctx context.Context, s RecordSource, first *timeline.Record) (Restart, bool, error) {
	var recs []time.Time
	for r, err := range s.Records(ctx, timeline.Query{Since: first.Time.Add(-lookback), Until: first.Time}) {
		if err != nil {
			return Restart{}, false, err
		}
		recs = append(recs, r.Time)
	}
	r := Restart{Component: "kube-apiserver", Up: first.Time, Evidence: first.Evidence, Record: first.ID}
	if len(recs) < 2 {
		return r, false, nil // nothing served before it: the evidence begins here
	}
	span := first.Time.Sub(recs[0])
	rate := float64(len(recs)) / span.Seconds()
	at, gap := len(recs)-1, first.Time.Sub(recs[len(recs)-1])
	for i := 1; i < len(recs); i++ {
		if g := recs[i].Sub(recs[i-1]); g > gap {
			at, gap = i-1, g
		}
	}
	switch {
	case rate*gap.Seconds() > silenceNats:
		r.LastServed = recs[at]
		if at+1 < len(recs) {
			r.Up = recs[at+1]
		}
	case span < startSpread:
		return r, false, nil // its own first requests: the evidence begins here
	default:
		r.LastServed = recs[len(recs)-1]
	}
	return r, true, nil
}
