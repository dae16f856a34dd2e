package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

func TestBisectSessionLifecycle(t *testing.T) {
	timelinetest.CheckBisectLifecycle(t, openTest(t))
}

// TestBisectMarksSurviveReopen guards that marks are read back from the
// file by a read-only store, as the TUI reads them.
func TestBisectMarksSurviveReopen(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "t.db")
	rw, err := Open(ctx, file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := rw.StartBisect(ctx, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	mark := timeline.BisectMark{Session: id, Kind: timeline.BisectBad, Time: time.Date(2026, 5, 1, 10, 3, 0, 0, time.UTC), At: time.Unix(2, 0).UTC()}
	if err := rw.AddBisectMark(ctx, mark); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	ro, err := Open(ctx, file, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	got, err := ro.Bisect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || len(got.Marks) != 1 {
		t.Fatalf("read-only Bisect = %+v, want one mark", got)
	}
	if diff := cmp.Diff(mark, got.Marks[0]); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestChangesBetweenAndCountRecords(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "x"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	b, err := s.Batch(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []struct {
		name, rv string
		at       time.Duration
	}{{"a", "1", 0}, {"b", "2", time.Minute}, {"a", "3", 2 * time.Minute}, {"c", "4", 3 * time.Minute}} {
		ov := timeline.ObjectVersion{Object: timeline.ObjectRef{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespace: "ml", Name: v.name, UID: "u" + v.name},
			ResourceVersion: v.rv, Time: t0.Add(v.at), Content: []byte(`{"kind":"ConfigMap","data":{"k":"` + v.rv + `"}}`), Evidence: timeline.Evidence{Line: int64(i + 1)}}
		if _, err := b.AddVersion(ctx, &ov); err != nil {
			t.Fatal(err)
		}
	}
	for i, src := range []timeline.SourceKind{timeline.SourceAudit, timeline.SourceAudit, timeline.SourceEvent, timeline.SourceAudit} {
		r := timeline.Record{Key: string(rune('a' + i)), Time: t0.Add(time.Duration(i) * time.Minute), Source: src}
		if _, err := b.AddRecord(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(ctx, nil); err != nil {
		t.Fatal(err)
	}
	label := func(vs []timeline.ObjectVersion) []string {
		var out []string
		for _, v := range vs {
			if v.Content != nil || v.Hash == "" {
				t.Errorf("version %s@%s: want a hash and no content", v.Object.Name, v.ResourceVersion)
			}
			out = append(out, v.Object.Kind+"/"+v.Object.Namespace+"/"+v.Object.Name+"@"+v.ResourceVersion)
		}
		return out
	}
	for _, tc := range []struct {
		name         string
		since, until time.Time
		limit        int
		versions     []string
		records      map[timeline.SourceKind]int64
	}{
		{"all", time.Time{}, time.Time{}, 0,
			[]string{"ConfigMap/ml/a@1", "ConfigMap/ml/b@2", "ConfigMap/ml/a@3", "ConfigMap/ml/c@4"},
			map[timeline.SourceKind]int64{"audit": 3, "event": 1}},
		{"half-open", t0.Add(time.Minute), t0.Add(3 * time.Minute), 0,
			[]string{"ConfigMap/ml/b@2", "ConfigMap/ml/a@3"},
			map[timeline.SourceKind]int64{"audit": 1, "event": 1}},
		{"limit", t0.Add(time.Nanosecond), time.Time{}, 1,
			[]string{"ConfigMap/ml/b@2"},
			map[timeline.SourceKind]int64{"audit": 2, "event": 1}},
		{"empty", t0.Add(time.Hour), time.Time{}, 0, nil, map[timeline.SourceKind]int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs, err := s.Versions(ctx, timeline.ChangesBetween(tc.since, tc.until, tc.limit))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.versions, label(vs)); diff != "" {
				t.Errorf("versions (-want +got)\n%s", diff)
			}
			n, err := s.CountRecords(ctx, tc.since, tc.until)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.records, n); diff != "" {
				t.Errorf("records (-want +got)\n%s", diff)
			}
		})
	}
}

// TestVersionsWithinSpan: Since and Until narrow every kind of version
// query, not only the changes of a window; ByTime orders any of them by
// time; NoContent alone drops the bodies.
func TestVersionsWithinSpan(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run := &timeline.IngestRun{Source: timeline.SourceObject, Path: "x"}
	if err := s.BeginRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	b, err := s.Batch(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []struct {
		name, rv string
		at       time.Duration
	}{{"b", "1", 0}, {"a", "2", time.Minute}, {"b", "3", 2 * time.Minute}, {"c", "4", 3 * time.Minute}} {
		ov := timeline.ObjectVersion{Object: timeline.ObjectRef{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespace: "ml", Name: v.name, UID: "u" + v.name},
			ResourceVersion: v.rv, Time: t0.Add(v.at), Content: []byte(`{"kind":"ConfigMap","data":{"k":"` + v.rv + `"}}`), Evidence: timeline.Evidence{Line: int64(i + 1)}}
		if _, err := b.AddVersion(ctx, &ov); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		q         timeline.VersionQuery
		want      []string
		noContent bool
	}{
		{"history in a span, by object", timeline.VersionQuery{History: true, Since: t0.Add(time.Minute), Until: t0.Add(3 * time.Minute)},
			[]string{"a@2", "b@3"}, false},
		{"history in a span, by time", timeline.VersionQuery{History: true, ByTime: true, Since: t0, Until: t0.Add(3 * time.Minute)},
			[]string{"b@1", "a@2", "b@3"}, false},
		{"latest before until", timeline.VersionQuery{Until: t0.Add(2 * time.Minute)},
			[]string{"a@2", "b@1"}, false},
		{"latest at At among those after since", timeline.VersionQuery{At: t0.Add(3 * time.Minute), Since: t0.Add(time.Minute)},
			[]string{"a@2", "b@3", "c@4"}, false},
		{"one object by time, no content", timeline.VersionQuery{Name: "b", History: true, ByTime: true, NoContent: true},
			[]string{"b@1", "b@3"}, true},
		{"limit by time", timeline.VersionQuery{History: true, ByTime: true, Limit: 2, Since: t0.Add(time.Nanosecond)},
			[]string{"a@2", "b@3"}, false},
		{"nothing in the span", timeline.VersionQuery{History: true, Since: t0.Add(time.Hour)}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs, err := s.Versions(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range vs {
				got = append(got, v.Object.Name+"@"+v.ResourceVersion)
				if (v.Content == nil) != tc.noContent || v.Hash == "" {
					t.Errorf("%s@%s: content %q, hash %q", v.Object.Name, v.ResourceVersion, v.Content, v.Hash)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestStartBisectWithMarks guards session start as one transaction: the
// marks arrive with the session, and a mark the table refuses leaves the
// open session as it was.
func TestStartBisectWithMarks(t *testing.T) {
	timelinetest.CheckStartBisectWithMarks(t, openTest(t))
}
