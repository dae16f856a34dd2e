package rollup

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestCloneLeavesTheLine: a clone of a request or a class equals it and
// shares none of the bytes its strings pointed into (a decoded line).
func TestCloneLeavesTheLine(t *testing.T) {
	line := strings.Repeat("x", 100) + "list,batch,jobs,status,cluster,system:node:n1,kubelet/v1.31,system:node:n1/raw"
	f := strings.Split(line[100:], ",")
	q := Request{Class: Class{Verb: f[0], Group: f[1], Resource: f[2], Subresource: f[3], Scope: f[4], User: f[5], UserAgent: f[6]},
		TimeNS: 42, User: f[7], Etcd: true}
	for _, s := range f {
		if !timelinetest.Inside(s, line) {
			t.Fatalf("test set-up: %q is not inside the line", s)
		}
	}
	c := q.Clone()
	if diff := cmp.Diff(q, c); diff != "" {
		t.Errorf("Request.Clone (-want +got)\n%s", diff)
	}
	k := q.Class.Clone()
	if diff := cmp.Diff(q.Class, k); diff != "" {
		t.Errorf("Class.Clone (-want +got)\n%s", diff)
	}
	for i, s := range []string{c.Class.Verb, c.Class.Group, c.Class.Resource, c.Class.Subresource, c.Class.Scope, c.Class.User, c.Class.UserAgent, c.User,
		k.Verb, k.Group, k.Resource, k.Subresource, k.Scope, k.User, k.UserAgent} {
		if timelinetest.Inside(s, line) {
			t.Errorf("field %d (%q) of the clone still points into the line", i, s)
		}
	}
	empty := Request{}.Clone()
	if diff := cmp.Diff(Request{}, empty); diff != "" {
		t.Errorf("empty Request.Clone (-want +got)\n%s", diff)
	}
}
