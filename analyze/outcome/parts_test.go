package outcome

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

func TestWindowParts(t *testing.T) {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	var none time.Time
	first, last := t0, at(8).Add(-time.Nanosecond) // [first, last] is [t0, t0+8s)
	tests := []struct {
		name                      string
		since, until, first, last time.Time
		n                         int
		want                      [][2]time.Time
	}{
		{"unbounded: the ends stay open", none, none, first, last, 4,
			[][2]time.Time{{none, at(2)}, {at(2), at(4)}, {at(4), at(6)}, {at(6), none}}},
		{"a window inside the bounds: its ends kept", at(1), at(5), first, last, 2,
			[][2]time.Time{{at(1), at(3)}, {at(3), at(5)}}},
		{"a window wider than the bounds: split over the evidence", at(-100), at(100), first, last, 2,
			[][2]time.Time{{at(-100), at(4)}, {at(4), at(100)}}},
		{"one part", none, none, first, last, 1, [][2]time.Time{{none, none}}},
		{"no evidence", none, none, none, none, 4, [][2]time.Time{{none, none}}},
		{"no room", at(3), at(3), first, last, 4, [][2]time.Time{{at(3), at(3)}}},
		{"a window after the evidence", at(20), none, first, last, 4, [][2]time.Time{{at(20), none}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := windowParts(tt.since, tt.until, tt.first, tt.last, tt.n)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// noBounds hides a store's Bounds: readBad reads it in one part.
type noBounds struct{ m *timelinetest.Mem }

func (n noBounds) Records(ctx context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error] {
	return n.m.Records(ctx, q)
}

func (n noBounds) Versions(ctx context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error) {
	return n.m.Versions(ctx, q)
}

// TestBadRecordsInParts: read in parts of the window, a few at a time, the
// bad records are those one read of the whole window gives, in its order,
// a record two filters keep once, records on the parts' edges included.
func TestBadRecordsInParts(t *testing.T) {
	m := &timelinetest.Mem{}
	id := int64(0)
	add := func(at time.Duration, code int, reason, extra string) {
		id++
		m.Add(&timeline.Record{ID: id, Time: t0.Add(at), Source: timeline.SourceAudit, Code: code, Reason: reason,
			Object: timeline.ObjectRef{Resource: "pods", Namespace: "ml", Name: "w"}, Extra: []byte(extra)})
	}
	for i := range 400 {
		at := time.Duration(i) * 97 * time.Millisecond
		switch i % 4 {
		case 0:
			add(at, 429, "", `{"pod":"ml/w-1"}`)
		case 1:
			add(at, 500, "Failed", "") // both the requests' and the states' filter
		case 2:
			add(at, 200, "", "")
		case 3:
			add(at, 200, "BackOff", "")
		}
	}
	for _, edge := range []time.Duration{0, 4850 * time.Millisecond, 9700 * time.Millisecond} {
		add(edge, 503, "", "")
	}
	for _, opt := range []Options{{}, {Since: t0.Add(3 * time.Second)}, {Since: t0.Add(2 * time.Second), Until: t0.Add(20 * time.Second)}} {
		want, err := readBadRecords(noBounds{m}, opt)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := Store(noBounds{m}).(bounder); ok {
			t.Fatal("noBounds has Bounds")
		}
		got, err := readBadRecords(m, opt)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 100 {
			t.Fatalf("%+v: %d bad records, want more", opt, len(want))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%+v: in parts (-one read +parts)\n%s", opt, diff)
		}
	}
}

// TestReadPartsStopsAtError: the first error is returned, alone, and the
// reads not yet begun are not begun. The reads after the failing one wait
// for the cancellation (as a slow read would), so the count does not
// depend on how the goroutines are scheduled: the three before it, it,
// and at most one more per other reader. (With reads that return at
// once, a reader holding the failing part could be descheduled while the
// others ran every part: a flake seen once in 30 runs.)
func TestReadPartsStopsAtError(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int64
	_, err := readParts(context.Background(), 3, 100, func(ctx context.Context, q, p int, g *gather[Observation]) error {
		calls.Add(1)
		switch j := q*100 + p; {
		case j < 3:
			return nil
		case j == 3:
			return boom
		}
		<-ctx.Done()
		return ctx.Err()
	})
	if err != boom { // that error alone, not joined with the cancellations it caused
		t.Errorf("err = %v, want boom", err)
	}
	if n, most := calls.Load(), int64(3+readers()); n > most {
		t.Errorf("%d reads begun of 300, want at most %d: the reads stopped after the error", n, most)
	}
}

// TestBadRecordsOnManyCores: however many cores, the parts are read few
// at a time. A SQLite read holds a connection while it runs and takes
// another to look up a string it has not cached yet; with a reader per
// core (8 here) all four connections were held by reads waiting for a
// fifth, and investigate never returned.
func TestBadRecordsOnManyCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	s := sqlitetest.New(t)
	var recs []timeline.Record
	for i := range 400 { // strings the reads have not seen: a lookup each
		ns := fmt.Sprintf("ns-%d", i)
		recs = append(recs, timeline.Record{Key: ns, Time: t0.Add(time.Duration(i) * time.Second),
			Source: timeline.SourceAudit, Verb: "get", Code: 429, User: "system:serviceaccount:" + ns + ":w",
			Object: timeline.ObjectRef{Resource: "pods", Namespace: ns, Name: "w"}})
	}
	timelinetest.AddRecords(t, s, recs...)
	// A read waiting for a connection gives up with its context.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := readBad(ctx, s, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.appendTo(nil); len(got) != 400 {
		t.Errorf("%d bad records, want 400", len(got))
	}
	// And beside the reads of object states (Read).
	out, err := Read(ctx, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Bad) != 400 {
		t.Errorf("Read: %d bad observations, want 400", len(out.Bad))
	}
}

// planned is a store in memory that plans its reads, and counts them.
type planned struct {
	*timelinetest.Mem
	reads atomic.Int64
}

func (p *planned) PlansReads() bool { return true }

func (p *planned) Records(ctx context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error] {
	p.reads.Add(1)
	return p.Mem.Records(ctx, q)
}

// TestPlannerReadsWhole: a store that plans each read (a ClickHouse
// cluster) is read the window whole, once a query, not in parts, and
// gives the same bad records.
func TestPlannerReadsWhole(t *testing.T) {
	m := &timelinetest.Mem{}
	for i := range 100 {
		m.Add(&timeline.Record{ID: int64(i + 1), Time: t0.Add(time.Duration(i) * time.Second), Source: timeline.SourceAudit, Code: 500,
			Object: timeline.ObjectRef{Resource: "pods", Namespace: "ml", Name: "w"}})
	}
	want, err := readBadRecords(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := &planned{Mem: m}
	got, err := readBadRecords(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-in parts +whole)\n%s", diff)
	}
	const queries = 3 // defaultBadRequests, defaultBadStates, defaultBadNode
	if n := p.reads.Load(); n != queries {
		t.Errorf("%d reads of records, want %d (one a query)", n, queries)
	}
}

// readBadRecords is readBad's observations, in the order Read has them.
func readBadRecords(s Store, opt Options) ([]Observation, error) {
	b, err := readBad(context.Background(), s, opt, nil)
	if err != nil {
		return nil, err
	}
	return b.appendTo(nil), nil
}
