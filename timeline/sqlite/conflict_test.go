package sqlite

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// TestConflictsAreKept: a record whose natural key is held by another
// request's record is evidence, not a duplicate. It used to be skipped (same
// stage) or joined (RequestReceived of alice get p1 with ResponseComplete of
// bob delete p2 403 made one record "alice get p1 403").
func TestConflictsAreKept(t *testing.T) {
	p := func(name string) timeline.ObjectRef {
		return timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "ml", Name: name}
	}
	rr, rc := timeline.StageRequestReceived, timeline.StageResponseComplete
	req := func(st timeline.Stage, user, verb, name string, code int) timeline.Record {
		r := stage("x", 0, st, verb, p(name), code, 0)
		r.User = user
		return r
	}
	type rec struct {
		User, Verb, Name string
		Code             int
		Stages           timeline.Stage
	}
	for _, tc := range []struct {
		name    string
		in      []timeline.Record
		want    []timeline.AddResult
		records []rec
	}{
		{"same stage, another request",
			[]timeline.Record{req(rc, "alice", "get", "p1", 200), req(rc, "bob", "delete", "p2", 403)},
			[]timeline.AddResult{timeline.Added, timeline.Conflict},
			[]rec{{"alice", "get", "p1", 200, rc}, {"bob", "delete", "p2", 403, rc}}},
		{"stages of two requests do not join",
			[]timeline.Record{req(rr, "alice", "get", "p1", 0), req(rc, "bob", "delete", "p2", 403)},
			[]timeline.AddResult{timeline.Added, timeline.Conflict},
			[]rec{{"alice", "get", "p1", 0, rr}, {"bob", "delete", "p2", 403, rc}}},
		{"a conflicting request's stages join its own record",
			[]timeline.Record{req(rr, "alice", "get", "p1", 0), req(rc, "bob", "delete", "p2", 403), req(rr, "bob", "delete", "p2", 0),
				req(rc, "alice", "get", "p1", 200)},
			[]timeline.AddResult{timeline.Added, timeline.Conflict, timeline.Merged, timeline.Merged},
			[]rec{{"alice", "get", "p1", 200, rr | rc}, {"bob", "delete", "p2", 403, rr | rc}}},
		{"same request and stage, another code",
			[]timeline.Record{req(rc, "alice", "get", "p1", 200), req(rc, "alice", "get", "p1", 500), req(rc, "alice", "get", "p1", 503)},
			[]timeline.AddResult{timeline.Added, timeline.Conflict, timeline.Conflict},
			[]rec{{"alice", "get", "p1", 200, rc}, {"alice", "get", "p1", 500, rc}, {"alice", "get", "p1", 503, rc}}},
		{"an earlier stage seen again is a duplicate",
			[]timeline.Record{req(rr, "alice", "get", "p1", 0), req(rc, "alice", "get", "p1", 200), req(rr, "alice", "get", "p1", 0)},
			[]timeline.AddResult{timeline.Added, timeline.Merged, timeline.Duplicate},
			[]rec{{"alice", "get", "p1", 200, rr | rc}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := openTest(t)
			run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "audit.log"}
			if err := s.BeginRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			add := func() []timeline.AddResult {
				b, err := s.Batch(ctx, run.ID)
				if err != nil {
					t.Fatal(err)
				}
				var got []timeline.AddResult
				for _, r := range tc.in {
					res, err := b.AddRecord(ctx, &r)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, res)
				}
				if err := b.Commit(ctx, nil); err != nil {
					t.Fatal(err)
				}
				return got
			}
			if diff := cmp.Diff(tc.want, add()); diff != "" {
				t.Errorf("results (-want +got)\n%s", diff)
			}
			var got []rec
			for _, r := range collect(t, s, timeline.Query{}) {
				got = append(got, rec{r.User, r.Verb, r.Object.Name, r.Code, r.Stages})
			}
			if diff := cmp.Diff(tc.records, got); diff != "" {
				t.Errorf("records (-want +got)\n%s", diff)
			}
			// A re-ingest changes nothing: each conflict is found at its key.
			again := add()
			for i, res := range again {
				if res != timeline.Duplicate {
					t.Errorf("re-ingest: record %d is %v, want Duplicate", i, res)
				}
			}
		})
	}
}
