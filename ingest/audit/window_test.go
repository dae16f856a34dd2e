package audit

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

func TestPeekReceived(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 0, 0, 1000, time.UTC)
	plain := goodLine("p")
	// with replaces the first occurrence of old in plain.
	with := func(old, new string) string {
		if !strings.Contains(plain, old) {
			t.Fatalf("goodLine lacks %q", old)
		}
		return strings.Replace(plain, old, new, 1)
	}
	const recv = `"requestReceivedTimestamp":"2026-05-01T10:00:00.000001Z"`
	tests := []struct {
		name string
		line string
		ok   bool
	}{
		{"a plain event", plain, true},
		{"spaces around it", "  \t" + plain + " ", true},
		{"no kind", with(`"kind":"Event",`, ""), true},
		{"a key no field takes", with(`"kind":"Event",`, `"kind":"Event","metadata":{"x":1},`), true},
		{"kind EventList", with(`"kind":"Event"`, `"kind":"EventList"`), false},
		{"kind not a string", with(`"kind":"Event"`, `"kind":5`), false},
		{"an envelope's key: items", with(`"kind":"Event",`, `"kind":"Event","items":[],`), false},
		{"an envelope's key: properties", with(`"kind":"Event",`, `"properties":{},"kind":"Event",`), false},
		{"an envelope's key: message", with(`"kind":"Event",`, `"message":"x","kind":"Event",`), false},
		{"an envelope's time", with(`"kind":"Event",`, `"time":"2020-01-01T00:00:00Z","kind":"Event",`), false},
		{"a timestamp", with(`"kind":"Event",`, `"timestamp":"2020-01-01T00:00:00Z","kind":"Event",`), false},
		{"a GKE export's key", with(`"kind":"Event",`, `"protoPayload":{},"kind":"Event",`), false},
		{"the time twice", with(recv, recv+`,"requestReceivedTimestamp":"2030-01-01T00:00:00Z"`), false},
		{"the time under a folded key too", with(recv, recv+`,"RequestReceivedTimestamp":"2030-01-01T00:00:00Z"`), false},
		{"only a folded key", with(`"requestReceivedTimestamp"`, `"RequestReceivedTimestamp"`), false},
		{"an escaped key", with(`"requestReceivedTimestamp"`, `"requestReceived\u0054imestamp"`), false},
		{"a key not ASCII", with(`"kind":"Event",`, `"kind":"Event","é":1,`), false},
		{"no time", with(recv+",", ""), false},
		{"an empty time", with(recv, `"requestReceivedTimestamp":""`), false},
		{"a time that is not a string", with(recv, `"requestReceivedTimestamp":1714557600`), false},
		{"a time that does not parse", with(recv, `"requestReceivedTimestamp":"2026-13-01T10:00:00Z"`), false},
		{"a CloudWatch prefix", "2026-05-01T10:00:00Z " + plain, false},
		{"a NUL byte", with(`"verb":"list"`, "\"verb\":\"li\x00st\""), false},
		{"not an object", `["x"]`, false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := peekReceived([]byte(tt.line))
			if ok != tt.ok {
				t.Fatalf("peekReceived(%s) ok = %v, want %v", tt.line, ok, tt.ok)
			}
			if ok && !got.Equal(at) {
				t.Errorf("peekReceived = %s, want %s", got, at)
			}
		})
	}
}

// FuzzPeekReceived holds the peek to the decoder: a line the peek dates
// either decodes into no record (it is bad) or into exactly one, received
// at that time. A window may thus skip a line by its peeked time without
// losing a record it would have kept.
func FuzzPeekReceived(f *testing.F) {
	seedLines(f)
	for _, l := range sameLines(f) {
		f.Add(l)
	}
	// Lines whose top level names a time that is not their records': an
	// envelope's, a key given twice (encoding/json takes the last), or
	// under a key that folds onto it.
	const other = `"requestReceivedTimestamp":"2030-01-01T00:00:00Z"`
	inner := strings.ReplaceAll(goodLine("in"), `"`, `\"`)
	for _, l := range []string{
		`{` + other + `,"properties":{"log":"` + inner + `"}}`,
		`{` + other + `,"kind":"EventList","items":[` + goodLine("i") + `]}`,
		`{` + other + `,"logEvents":[{"message":"` + inner + `"}]}`,
		`{` + other + `,"message":"` + inner + `"}`,
		strings.TrimSuffix(goodLine("d"), `}`) + `,` + other + `}`,
		strings.TrimSuffix(goodLine("f"), `}`) + `,"RequestReceivedTimestamp":"2030-01-01T00:00:00Z"}`,
	} {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		at, ok := peekReceived(line)
		if !ok {
			return
		}
		evs, err := decode(line)
		if err != nil {
			return
		}
		if len(evs) != 1 {
			t.Fatalf("peeked %s, but the line decodes into %d events", at, len(evs))
		}
		rec, _, err := toRecord(&evs[0], line)
		if err != nil {
			return
		}
		if !rec.Time.Equal(at) {
			t.Errorf("peeked %s, the record was received at %s", at, rec.Time)
		}
	})
}

// TestWindowKeepsWhatAFullIngestHoldsInIt ingests a log whole and through a
// window: the window's timeline holds exactly the records of the whole
// one received in the window, its run counts the rest outside, and a
// later ingest without a window adds the rest, nothing twice.
func TestWindowKeepsWhatAFullIngestHoldsInIt(t *testing.T) {
	ctx := context.Background()
	log := filepath.Join("testdata", "auditgen-rr30.log.gz")
	win, all := checkWindow(t, log)
	s := sqlitetest.New(t)
	runs, err := Ingest(ctx, s, []string{log}, Options{Window: win})
	if err != nil {
		t.Fatal(err)
	}
	r := runs[0]
	if !r.Since.Equal(win.Since) || !r.Until.Equal(win.Until) {
		t.Errorf("run window [%s, %s), want [%s, %s)", r.Since, r.Until, win.Since, win.Until)
	}
	held, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := held[0]; !got.Since.Equal(win.Since) || !got.Until.Equal(win.Until) || got.Outside != r.Outside {
		t.Errorf("stored run: window [%s, %s), %d outside; want [%s, %s), %d", got.Since, got.Until, got.Outside,
			win.Since, win.Until, r.Outside)
	}

	rest, err := Ingest(ctx, s, []string{log}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(project(all), project(records(t, s))); diff != "" {
		t.Errorf("after a whole ingest on top of the window's (-whole ingest +window, then whole)\n%s", diff)
	}
	if rest[0].Outside != 0 || !rest[0].Since.IsZero() || !rest[0].Until.IsZero() {
		t.Errorf("a run without a window: %+v", rest[0])
	}
}

// TestWindowOverEnvelopes: the real logs of the shared samples (AKS and GKE
// envelopes, Falco's EventLists), whose lines the peek declines, are
// filtered by their records' times alike.
func TestWindowOverEnvelopes(t *testing.T) {
	dir := samplesDir(t)
	checkWindow(t, filepath.Join(dir, "elastic-test-audit.log"), filepath.Join(dir, "elastic-test-kube-audit.log"),
		filepath.Join(dir, "falco-create_deployment.json"), filepath.Join(dir, "falco-create_configmap_sensitive_values.json"))
}

// checkWindow ingests files whole, then through the window between the
// third and the two-thirds of their records' times (since kept, until
// not), and checks that the window's timeline holds exactly the whole
// one's records in it, and that each run counts every event it read,
// kept or outside. It returns the window and the whole ingest's records.
func checkWindow(t *testing.T, files ...string) (timeline.Span, []*timeline.Record) {
	t.Helper()
	ctx := context.Background()
	full := sqlitetest.New(t)
	fullRuns, err := Ingest(ctx, full, files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := records(t, full)
	times := make([]time.Time, len(all))
	for i, r := range all {
		times[i] = r.Time
	}
	slices.SortFunc(times, time.Time.Compare)
	win := timeline.Span{Since: times[len(times)/3], Until: times[2*len(times)/3]}
	var want []*timeline.Record
	for _, r := range all {
		if win.Contains(r.Time) {
			want = append(want, r)
		}
	}
	if len(want) == 0 || len(want) == len(all) {
		t.Fatalf("the window %+v holds %d of %d records: pick another", win, len(want), len(all))
	}
	s := sqlitetest.New(t)
	runs, err := Ingest(ctx, s, files, Options{Window: win})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(project(want), project(records(t, s))); diff != "" {
		t.Errorf("the window's records (-whole ingest, in the window +windowed ingest)\n%s", diff)
	}
	var outside int64
	for i, r := range runs {
		f := fullRuns[i]
		if r.Lines != f.Lines {
			t.Errorf("%s: the windowed run read %d lines, the whole one %d", r.Path, r.Lines, f.Lines)
		}
		if in, whole := r.Records+r.Merged+r.Duplicates+r.Outside, f.Records+f.Merged+f.Duplicates; in != whole {
			t.Errorf("%s: the windowed run counted %d events (%d outside), the whole one %d", r.Path, in, r.Outside, whole)
		}
		outside += r.Outside
	}
	if outside == 0 {
		t.Error("no event counted outside the window")
	}
	return win, all
}
