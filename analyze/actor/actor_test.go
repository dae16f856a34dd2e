package actor

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

func TestOfVersion(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	cm := timeline.ObjectRef{Version: "v1", Resource: "configmaps", Namespace: "ml", Name: "trainer-env", UID: "u1"}
	other := cm
	other.Name = "other"
	write := func(at time.Duration, user, verb string, o timeline.ObjectRef, code int, line int64) *timeline.Record {
		return &timeline.Record{Time: t0.Add(at), Source: timeline.SourceAudit, Verb: verb, User: user, UserAgent: user + "-agent",
			Object: o, Code: code, Evidence: timeline.Evidence{Run: 1, Line: line}}
	}
	s := (&timelinetest.Mem{}).Add(
		write(0, "alice", "patch", cm, 200, 10),
		write(2*time.Second, "bob", "update", other, 200, 11),
		write(3*time.Second, "mallory", "update", cm, 409, 12), // refused: made nothing
		write(4*time.Second, "carol", "get", cm, 200, 13),      // a read makes nothing
		write(20*time.Second, "dave", "update", cm, 200, 14),   // too far
		write(-time.Second, "erin", "update", cm, 200, 9),      // nearest before the read below
		write(time.Second/2, "frank", "update", cm, 200, 15),   // after that read: not its maker
	)
	v := func(at time.Duration, seen timeline.Sighting, line int64) *timeline.ObjectVersion {
		return &timeline.ObjectVersion{Object: cm, Time: t0.Add(at), Seen: seen, Evidence: timeline.Evidence{Run: 1, Line: line}}
	}
	for _, tc := range []struct {
		name string
		v    *timeline.ObjectVersion
		want Actor
	}{
		{"the write at the version's evidence", v(0, timeline.SeenWritten, 10), Actor{By: "alice", UserAgent: "alice-agent"}},
		{"a read: the nearest earlier accepted write of the object", v(time.Second/4, timeline.SeenRead, 13), Actor{By: "alice", UserAgent: "alice-agent"}},
		{"a dump's version has no actor", v(0, timeline.SeenInferred, 0), Actor{}},
		{"no write near", v(time.Hour, timeline.SeenRead, 0), Actor{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OfVersion(context.Background(), s, tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("OfVersion (-want +got):\n%s", diff)
			}
		})
	}
	if got := (Actor{}).String(); got != Unknown {
		t.Errorf("an unknown actor says %q, want %q", got, Unknown)
	}
}
