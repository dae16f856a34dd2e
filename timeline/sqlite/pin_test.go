package sqlite

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestCachesLeaveTheLine: what the store remembers past a batch (string
// ids, request classes, open requests) holds copies of a record's
// strings, not the strings themselves: a record's strings share its
// decoded line's buffer, and a cache of 2^17 requests that each kept its
// line would hold hundreds of megabytes.
func TestCachesLeaveTheLine(t *testing.T) {
	s := openTest(t)
	line := strings.Repeat("x", 64) + "list|batch|jobs|ml|job-7|system:serviceaccount:ml:runner|runner/v2|/apis/batch/v1/namespaces/ml/jobs"
	f := strings.Split(line[64:], "|")
	r := timeline.Record{Key: "audit-1", Time: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), Source: timeline.SourceAudit,
		Verb: f[0], Object: timeline.ObjectRef{Group: f[1], Resource: f[2], Namespace: f[3], Name: f[4]},
		User: f[5], UserAgent: f[6], URI: f[7], AuditID: "audit-1", Stages: timeline.StageRequestReceived}
	done := r // a request seen whole, which the rollup counts
	done.Key, done.AuditID, done.Stages, done.Code = "audit-2", "audit-2", timeline.StageRequestReceived|timeline.StageResponseComplete, 200
	timelinetest.AddRecords(t, s, r, done)
	var kept []string
	for k := range s.cache.m {
		kept = append(kept, k)
	}
	for k := range s.classes.m {
		kept = append(kept, k.Verb, k.Group, k.Resource, k.Subresource, k.Scope, k.User, k.UserAgent)
	}
	opens := 0
	for _, o := range s.open.m {
		opens++
		if o.rq != nil {
			c := o.rq.Class
			kept = append(kept, c.Verb, c.Group, c.Resource, c.Subresource, c.Scope, c.User, c.UserAgent, o.rq.User)
		}
	}
	if len(s.cache.m) == 0 || len(s.classes.m) == 0 || opens != 1 {
		t.Fatalf("test set-up: %d strings, %d classes, %d open requests cached; want some, some, 1",
			len(s.cache.m), len(s.classes.m), opens)
	}
	for _, k := range kept {
		if timelinetest.Inside(k, line) {
			t.Errorf("a cache keeps %q, a string of the record's line, not a copy", k)
		}
	}
}
