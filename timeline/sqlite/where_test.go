package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/faultline/faultline/timeline"
)

// whereT0 is the time most test records cluster around.
var whereT0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// whereRecords is the fixed data the filter tests run on. AuditID labels each
// record, so expectations read as names; it is unique and never empty.
func whereRecords() []timeline.Record {
	ms := time.Millisecond
	ann := func(kv ...string) []byte {
		var b strings.Builder
		b.WriteString(`{"annotations":{`)
		for i := 0; i < len(kv); i += 2 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%q:%q", kv[i], kv[i+1])
		}
		b.WriteString("}}")
		return []byte(b.String())
	}
	pod := func(ns, name string) timeline.ObjectRef {
		return timeline.ObjectRef{Version: "v1", Resource: "pods", Kind: "Pod", Namespace: ns, Name: name}
	}
	audit, event := timeline.SourceAudit, timeline.SourceEvent
	done := timeline.StageResponseComplete
	recs := []timeline.Record{
		{AuditID: "get-pod", Time: whereT0, Source: audit, Object: pod("default", "web-1"), Verb: "get", User: "alice",
			UserAgent: "kubectl/v1.30.0", SourceIP: "10.0.0.1", Code: 200, Level: "Metadata", Latency: 5 * ms, Stages: done,
			URI: "/api/v1/namespaces/default/pods/web-1", Extra: ann("authorization.k8s.io/decision", "allow", "x", "y")},
		{AuditID: "list-pods-n1", Time: whereT0.Add(time.Minute), Source: audit, Object: timeline.ObjectRef{Version: "v1", Resource: "pods"},
			Verb: "list", User: "system:node:n1", UserAgent: "kubelet/v1.30.0", SourceIP: "10.0.1.1", Code: 200, Level: "Metadata",
			Latency: 120 * ms, Stages: done, URI: "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1"},
		{AuditID: "watch-node-n2", Time: whereT0.Add(2 * time.Minute), Source: audit,
			Object: timeline.ObjectRef{Version: "v1", Resource: "nodes", Name: "n2"}, Verb: "watch", User: "system:node:n2",
			UserAgent: "kubelet/v1.30.0", SourceIP: "10.0.1.2", Code: 200, Level: "Metadata", Latency: 30 * time.Minute,
			Stages: timeline.StageResponseStarted | done, URI: "/api/v1/nodes?watch=true"},
		{AuditID: "create-forbidden", Time: whereT0.Add(3 * time.Minute), Source: audit,
			Object: timeline.ObjectRef{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "prod", Name: "api"}, Verb: "create",
			User: "bob", UserAgent: "kubectl/v1.29.1", SourceIP: "192.168.0.7", Code: 403, Level: "RequestResponse",
			Latency: 2 * ms, Stages: done, Message: `deployments.apps is forbidden: User "bob" cannot create`,
			Extra: ann("authorization.k8s.io/decision", "forbid")},
		{AuditID: "get-404", Time: whereT0.Add(4 * time.Minute), Source: audit,
			Object: timeline.ObjectRef{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "missing"}, Verb: "get",
			User: "alice", UserAgent: "kubectl/v1.30.0", SourceIP: "10.0.0.1", Code: 404, Level: "Metadata",
			Latency: time.Second, Stages: done, Message: `configmaps "missing" not found`},
		{AuditID: "throttled-429", Time: whereT0.Add(5 * time.Minute), Source: audit, Object: pod("kube-system", "coredns-x"),
			Verb: "update", User: "system:serviceaccount:kube-system:replicaset-controller", UserAgent: "kube-controller-manager/v1.30.0",
			Code: 429, Level: "Request", Latency: 0, Stages: done},
		{AuditID: "patch-500", Time: whereT0.Add(6 * time.Minute), Source: audit,
			Object: timeline.ObjectRef{Version: "v1", Resource: "nodes", Subresource: "status", Name: "n1"}, Verb: "patch",
			User: "system:node:n1", UserAgent: "kubelet/v1.30.0", Code: 500, Level: "Metadata", Latency: 2 * time.Hour,
			Stages: done, Message: "etcdserver: request timed out"},
		{AuditID: "delete-503", Time: whereT0.Add(7 * time.Minute), Source: audit, Object: pod("prod", "api-7f9c"),
			Verb: "delete", User: "system:node:", Code: 503, Level: "Metadata", Latency: 10 * time.Second, Stages: timeline.StagePanic},
		{AuditID: "ev-backoff", Time: whereT0.Add(8 * time.Minute), Source: event, Object: pod("default", "web-1"),
			Reason: "BackOff", Type: "Warning", Message: "Back-off restarting failed container"},
		{AuditID: "ev-failedscheduling", Time: whereT0.Add(9 * time.Minute), Source: event, Object: pod("prod", "api-7f9c"),
			Reason: "FailedScheduling", Type: "Warning", Message: "0/3 nodes are available: 3 Insufficient cpu."},
		{AuditID: "ev-scheduled", Time: whereT0.Add(10 * time.Minute), Source: event, Object: pod("default", "web-1"),
			Reason: "Scheduled", Type: "Normal", Message: "Successfully assigned default/web-1 to n1"},
		{AuditID: "unicode", Time: whereT0.Add(11 * time.Minute), Source: audit, Object: pod("日本", "café-ü"), Verb: "get",
			User: "ユーザー", Code: 200, Latency: 7 * ms, Stages: done, Message: "🚀 launched ünïcødé", URI: "/api/v1/namespaces/日本/pods/café-ü"},
		{AuditID: "wildcards", Time: whereT0.Add(12 * time.Minute), Source: audit, Object: pod("default", `a%b_c*d'e`),
			Verb: "get", User: "Alice", Code: 201, Stages: done, URI: `/x?q=%25_*'"[a]`, Message: `50% of _all_ *'s "quoted"`},
		{AuditID: "zero-time", Source: audit},
		{AuditID: "before-epoch", Time: time.Unix(-1, 0), Source: audit, Verb: "get", Code: 200},
		{AuditID: "in-1960", Time: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), Source: event, Reason: "Ancient", Latency: -time.Second},
		{AuditID: "epoch", Time: time.Unix(0, 0), Source: audit, Verb: "list"},
		{AuditID: "epoch-plus-1ns", Time: time.Unix(0, 1), Source: audit, Verb: "list"},
		{AuditID: "nul-bytes", Time: whereT0.Add(13 * time.Minute), Source: audit, Object: pod("default", "x\x00y"), Verb: "get",
			User: "nul\x00user", Message: "nul\x00byte", URI: "/a\x00b", Code: 200},
		{AuditID: "bad-utf8", Time: whereT0.Add(14 * time.Minute), Source: audit, Object: pod("default", "bad\xc3("),
			UserAgent: "\xff\xfe-agent", Message: "bad\xc3(", URI: "/\xff", Code: 200},
		{AuditID: "uppercase", Time: whereT0.Add(15 * time.Minute), Source: audit, Object: pod("DEFAULT", "WEB-1"), Verb: "GET",
			User: "ALICE", Code: 200},
		{AuditID: "system-nodes", Time: whereT0.Add(16 * time.Minute), Source: audit, Verb: "list", User: "system:nodes", Code: 200},
		{AuditID: "received-only", Time: whereT0.Add(17 * time.Minute), Source: audit, Object: pod("default", "web-2"), Verb: "create",
			User: "alice", Stages: timeline.StageRequestReceived},
		{AuditID: "same-ns-name", Time: whereT0.Add(18 * time.Minute), Source: audit,
			Object: timeline.ObjectRef{Resource: "namespaces", Namespace: "kube-public", Name: "kube-public"}, Verb: "get", User: "get", Code: 200},
		{AuditID: "dup-time", Time: whereT0, Source: audit, Object: pod("default", "web-1"), Verb: "get", User: "alice", Code: 200},
		{AuditID: "far-future", Time: time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC), Source: event, Reason: "Future"},
		{AuditID: "ns-resolution", Time: whereT0.Add(time.Second + 1), Source: audit, Verb: "get", Code: 200, Latency: 1},
	}
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	users := []string{"alice", "system:node:n1", "system:kube-scheduler", "bob", ""}
	codes := []int{0, 200, 201, 404, 429, 500, 409}
	for i := range 16 {
		recs = append(recs, timeline.Record{
			AuditID: fmt.Sprintf("gen-%02d", i), Time: whereT0.Add(time.Duration(i) * 17 * time.Second), Source: audit,
			Object: pod([]string{"default", "prod", ""}[i%3], fmt.Sprintf("pod-%02d", i)), Verb: verbs[i%len(verbs)],
			User: users[i%len(users)], Code: codes[i%len(codes)],
			Latency: time.Duration(i*37) * ms, Stages: timeline.Stage(1 << (i % 4)), Level: []string{"Metadata", "Request"}[i%2],
			URI: fmt.Sprintf("/api/v1/pods/pod-%02d", i),
		})
	}
	for i := range recs {
		recs[i].Key = "where\x00" + recs[i].AuditID
		recs[i].Evidence.Line = int64(i + 1)
	}
	return recs
}

// openWhereStore builds the filter test database in tb's temporary directory:
// records alternate between two ingest runs.
func openWhereStore(tb testing.TB) *Store {
	tb.Helper()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(tb.TempDir(), "where.db"), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	var runs [2]int64
	for i := range runs {
		run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: fmt.Sprintf("audit-%d.log", i)}
		if err := s.BeginRun(ctx, run); err != nil {
			tb.Fatal(err)
		}
		runs[i] = run.ID
	}
	b, err := s.Batch(ctx, runs[0])
	if err != nil {
		tb.Fatal(err)
	}
	for i, r := range whereRecords() {
		r.Evidence.Run = runs[i%2]
		if res, err := b.AddRecord(ctx, &r); err != nil || res != timeline.Added {
			tb.Fatalf("add %s: %v, %v", r.AuditID, res, err)
		}
	}
	if err := b.Commit(ctx, nil); err != nil {
		tb.Fatal(err)
	}
	return s
}

// allRecords reads every record, in the order Records yields them.
func allRecords(tb testing.TB, s *Store) []*timeline.Record {
	tb.Helper()
	var out []*timeline.Record
	for r, err := range s.Records(context.Background(), timeline.Query{}) {
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// storeLabels returns the labels of the records s yields for f, in order.
func storeLabels(tb testing.TB, s *Store, f *timeline.Filter) []string {
	tb.Helper()
	var out []string
	for r, err := range s.Records(context.Background(), timeline.Query{Where: f}) {
		if err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		out = append(out, r.AuditID)
	}
	return out
}

// celLabels returns the labels of the records CEL alone matches, in order:
// the oracle. A record on which the filter fails at run time does not match.
func celLabels(all []*timeline.Record, f *timeline.Filter) []string {
	var out []string
	for _, r := range all {
		if ok, _ := f.Match(r); ok {
			out = append(out, r.AuditID)
		}
	}
	return out
}

// checkAgainstCEL asserts that the store yields exactly the records CEL
// matches when run on every record.
func checkAgainstCEL(tb testing.TB, s *Store, all []*timeline.Record, f *timeline.Filter) {
	tb.Helper()
	if diff := cmp.Diff(celLabels(all, f), storeLabels(tb, s, f)); diff != "" {
		sql, args, complete := compileWhere(f.Expr())
		tb.Errorf("%s\nSQL: %s\nargs: %q complete: %v\nrecords (-CEL +store):\n%s", f, sql, args, complete, diff)
	}
}

func mustFilter(tb testing.TB, expr string) *timeline.Filter {
	tb.Helper()
	f, err := timeline.CompileFilter(expr)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

func TestCompileWhere(t *testing.T) {
	s := openWhereStore(t)
	all := allRecords(t, s)
	alice := []string{"get-pod", "get-404", "received-only", "dup-time", "gen-00", "gen-05", "gen-10", "gen-15"}
	tests := []struct {
		expr     string
		complete bool
		want     []string
	}{
		{`user == "alice"`, true, alice},
		{`"alice" == user && verb == "get"`, true, []string{"get-pod", "get-404", "dup-time", "gen-00"}},
		{`user == "nobody"`, true, nil},
		{`user != "nobody" && code == 403`, true, []string{"create-forbidden"}},
		{`!(user == "nobody") && code == 403`, true, []string{"create-forbidden"}},
		{`user.startsWith("system:node:")`, true,
			[]string{"list-pods-n1", "watch-node-n2", "patch-500", "delete-503", "gen-01", "gen-06", "gen-11"}},
		{`user.startsWith("system:node")`, true,
			[]string{"list-pods-n1", "watch-node-n2", "patch-500", "delete-503", "gen-01", "gen-06", "gen-11", "system-nodes"}},
		{`name.contains("%") || name.contains("_") || name.contains("'")`, true, []string{"wildcards"}},
		{`name.startsWith("a%")`, true, []string{"wildcards"}},
		{`name.startsWith("a_")`, true, nil}, // LIKE would match
		{`name.endsWith("-ü")`, true, []string{"unicode"}},
		{`name.contains("\x00")`, true, []string{"nul-bytes"}},
		{`message.contains("\u0000")`, true, []string{"nul-bytes"}},
		{`message.startsWith("bad")`, true, []string{"bad-utf8"}},
		{`message.startsWith("bad\xc3")`, true, nil}, // "\xc3" is U+00C3 in a CEL string: two bytes
		{`requestURI.endsWith("[a]")`, true, []string{"wildcards"}},
		// substr() of an empty BLOB is NULL: the empty uid must still count as not ending with "x".
		{`!uid.endsWith("x") && code == 403`, true, []string{"create-forbidden"}},
		{`requestURI.startsWith("/api/v1/namespaces/")`, true, []string{"get-pod", "unicode"}},
		{`ns == "日本" && name.startsWith("caf")`, true, []string{"unicode"}},
		{`userAgent.startsWith("kubelet/")`, true, []string{"list-pods-n1", "watch-node-n2", "patch-500"}},
		{`sourceIP == "10.0.0.1"`, true, []string{"get-pod", "get-404"}},
		{`group == "apps" || subresource == "status"`, true, []string{"create-forbidden", "patch-500"}},
		{`kind == "Pod" && level == "Request"`, true,
			[]string{"throttled-429", "gen-01", "gen-03", "gen-05", "gen-07", "gen-09", "gen-11", "gen-13", "gen-15"}},
		{`verb in ["watch", "patch"] && code >= 500`, true, []string{"patch-500", "gen-05", "gen-12"}},
		{`verb in ["get", "GET"] && ns == "DEFAULT"`, true, []string{"uppercase"}},
		{`resource == "pods" && verb in ["get", "list"]`, true, []string{"get-pod", "list-pods-n1", "unicode", "wildcards",
			"nul-bytes", "dup-time", "gen-00", "gen-01", "gen-07", "gen-08", "gen-14", "gen-15"}},
		{`user in []`, true, nil},
		{`code in [404, 429] && source == "audit"`, true,
			[]string{"get-404", "throttled-429", "gen-03", "gen-04", "gen-10", "gen-11"}},
		{`!(code in [0, 200, 201])`, true, []string{"create-forbidden", "get-404", "throttled-429", "patch-500", "delete-503",
			"gen-03", "gen-04", "gen-05", "gen-06", "gen-10", "gen-11", "gen-12", "gen-13"}},
		{`code >= 500`, true, []string{"patch-500", "delete-503", "gen-05", "gen-12"}},
		{`500 < code`, true, []string{"delete-503"}},
		{`code >= -9223372036854775808 && code == 0 && verb == "create"`, true, []string{"received-only"}},
		{`true && code == 429`, true, []string{"throttled-429", "gen-04", "gen-11"}},
		{`false || user == "bob"`, true, []string{"create-forbidden", "gen-03", "gen-08", "gen-13"}},
		{`1 < 2 && name.startsWith("") && code == 403`, true, []string{"create-forbidden"}},
		{`code == 200 ? verb == "list" : verb == "watch"`, true,
			[]string{"list-pods-n1", "system-nodes", "gen-01", "gen-08", "gen-15", "gen-02", "gen-09"}},
		{`time < timestamp("1970-01-01T00:00:00Z")`, true, []string{"in-1960", "before-epoch", "zero-time"}},
		{`time >= timestamp("1970-01-01T00:00:00Z") && time < timestamp("2026-05-01T10:00:01Z")`, true,
			[]string{"epoch", "epoch-plus-1ns", "get-pod", "dup-time", "gen-00"}},
		{`time > timestamp("2100-01-01T00:00:00Z")`, true, []string{"far-future"}},
		{`time == timestamp("0001-01-01T00:00:00Z")`, true, []string{"zero-time"}},
		{`time <= timestamp("1600-01-01T00:00:00Z")`, true, []string{"zero-time"}},
		{`time == timestamp("1970-01-01T00:00:00Z")`, true, []string{"epoch"}}, // the epoch is a time, not "no time"
		{`time == timestamp("2026-05-01T12:00:01.000000001+02:00")`, true, []string{"ns-resolution"}},
		{`time in [timestamp("2026-05-01T10:00:00Z"), timestamp("0001-01-01T00:00:00Z")]`, true,
			[]string{"get-pod", "dup-time", "gen-00", "zero-time"}},
		{`latency > duration("1h")`, true, []string{"patch-500"}},
		{`latency < duration("0s")`, true, []string{"in-1960"}},
		{`latency >= duration("500ms") && latency < duration("1s")`, true, []string{"gen-14", "gen-15"}},
		{`reason == "BackOff" || reason == "Scheduled"`, true, []string{"ev-backoff", "ev-scheduled"}},
		{`ns == name`, true, []string{"list-pods-n1", "zero-time", "before-epoch", "in-1960", "epoch", "epoch-plus-1ns",
			"system-nodes", "same-ns-name", "far-future", "ns-resolution"}},
		{`user == verb`, true, []string{"same-ns-name", "zero-time", "bad-utf8", "in-1960", "ev-backoff", "ev-failedscheduling",
			"ev-scheduled", "far-future"}},
		{`user > "system:node:n1"`, true, []string{"watch-node-n2", "system-nodes", "throttled-429", "unicode"}},
		{`!(user >= "b") && user != ""`, true, append([]string{"wildcards", "uppercase"}, alice...)},
		{`uid == "" && auditID == "get-pod"`, true, []string{"get-pod"}},
		{`auditID >= "w"`, true, []string{"watch-node-n2", "wildcards", "zero-time"}},
		{`run == 1 && line <= 3`, true, []string{"get-pod", "watch-node-n2"}},
		{`type == "Warning" && stage == ""`, false, []string{"ev-backoff", "ev-failedscheduling"}},
		{`stage == "Panic"`, false, []string{"delete-503", "gen-03", "gen-07", "gen-11", "gen-15"}},
		{`annotations["authorization.k8s.io/decision"] == "forbid"`, false, []string{"create-forbidden"}},
		{`user == "alice" && (annotations["x"] == "y" || code == 404)`, false, []string{"get-pod", "get-404", "gen-10"}},
		{`size(name) == 6 && ns == "default"`, false, []string{"gen-00", "gen-03", "gen-06", "gen-09", "gen-12", "gen-15"}},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			f := mustFilter(t, tt.expr)
			if _, _, complete := compileWhere(f.Expr()); complete != tt.complete {
				t.Errorf("complete = %v, want %v", complete, tt.complete)
			}
			sorted := cmpopts.SortSlices(func(a, b string) bool { return a < b })
			if diff := cmp.Diff(tt.want, storeLabels(t, s, f), sorted, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("records (-want +got)\n%s", diff)
			}
			checkAgainstCEL(t, s, all, f)
		})
	}
}

// differentialExprs cover every operator, its negation and its mirror, on
// every kind of field, mixed with parts that only CEL can evaluate. They are
// also the fuzz seeds.
var differentialExprs = []string{
	`user == "alice"`, `user != "alice"`, `!(user == "alice")`, `"alice" == user`, `"alice" != user`,
	`user == ""`, `user != ""`, `!(user != "")`, `user == "nobody"`, `user != "nobody"`, `!(user == "nobody")`,
	`user < "bob"`, `user <= "bob"`, `user > "bob"`, `user >= "bob"`, `"bob" < user`, `"bob" >= user`,
	`!(user < "bob")`, `!(user >= "nobody")`, `user > ""`, `user < ""`, `user >= ""`, `user <= ""`, `!(user > "")`,
	`user.startsWith("system:")`, `!user.startsWith("system:node:")`, `user.startsWith("")`, `!name.startsWith("")`,
	`user.endsWith("n1")`, `!user.endsWith(":n1")`, `user.contains("node")`, `!user.contains(":")`, `user.contains("")`,
	`name.contains("%")`, `name.contains("_c")`, `name.startsWith("a%b")`, `name.endsWith("e")`, `name.contains("'")`,
	`name.endsWith("ü")`, `name.contains("\x00")`, `name.endsWith("\u0000y")`, `name.startsWith("bad")`,
	`userAgent.startsWith("\xff")`, `userAgent.endsWith("agent")`, `message.contains("\u00c3")`, `message.contains("(")`,
	`requestURI.startsWith("/api/")`, `!requestURI.startsWith("/api/")`, `requestURI.endsWith("n1")`,
	`!requestURI.endsWith("n1")`, `!uid.endsWith("x")`, `!message.endsWith("d")`, `!message.contains("d")`,
	`requestURI.contains("%25")`, `requestURI < "/api/v1/p"`, `!(requestURI >= "/b")`, `requestURI == "/a\x00b"`,
	`message == ""`, `message != ""`, `message > "Back"`, `uid == ""`, `auditID != "get-pod"`, `auditID in ["gen-01", "x"]`,
	`verb in ["get", "list"]`, `!(verb in ["get", "list"])`, `verb in ["nothing"]`, `!(verb in [])`, `ns in ["", "prod"]`,
	`code == 200`, `code != 200`, `code < 400`, `code <= 404`, `code > 404`, `code >= 500`, `!(code >= 400)`,
	`404 <= code`, `200 != code`, `code in [404, 429, 500]`, `!(code in [0])`, `code == 0`, `code > -1`,
	`code < -9223372036854775807`, `code <= 9223372036854775807`, `run == 2`, `run != 1 && line > 10`, `line in [1, 2, 3]`,
	`time < timestamp("2026-05-01T10:05:00Z")`, `time >= timestamp("2026-05-01T10:05:00Z")`,
	`!(time > timestamp("1970-01-01T00:00:00Z"))`, `time <= timestamp("1969-12-31T23:59:59Z")`,
	`time != timestamp("1969-12-31T23:59:59Z")`, `time == timestamp("1970-01-01T00:00:00.000000001Z")`,
	`time > timestamp("0001-01-01T00:00:00Z")`, `time >= timestamp("0001-01-01T00:00:00Z")`,
	`time < timestamp("9999-12-31T23:59:59.999999999Z")`, `time > timestamp("2300-01-01T00:00:00Z")`,
	`timestamp("2026-05-01T10:00:00Z") <= time`, `time in [timestamp("1970-01-01T00:00:00Z")]`,
	`time > timestamp("2026-05-01T12:00:00+02:00")`, `time == time`, `time != time`,
	`latency > duration("1s")`, `latency <= duration("0")`, `latency != duration("5ms")`, `!(latency < duration("-1ns"))`,
	`duration("1s") <= latency`, `latency in [duration("0s"), duration("2h")]`, `latency > latency`,
	`reason == "BackOff"`, `reason != "BackOff"`, `reason.startsWith("Fail")`, `reason in ["BackOff", "Future"]`,
	`reason > "C"`, `reason == "" || reason == "Scheduled"`,
	`user == name`, `user != verb`, `ns == name`, `user < name`, `uid == auditID`, `message >= user`, `code < line`,
	`resource == "pods" && verb == "get" && ns == "default"`, `ns == "default" && name == "web-1"`,
	`user == "alice" || code >= 500`, `!(user == "alice" || code >= 500)`, `!(user == "alice" && code >= 500)`,
	`code == 200 ? user == "alice" : user == "bob"`, `true`, `false`, `!true`, `true || annotations["x"] == "y"`,
	`false && annotations["x"] == "y"`, `1 == 1`, `"a" > "b"`, `timestamp("2026-01-01T00:00:00Z") < timestamp("2025-01-01T00:00:00Z")`,
	`annotations["x"] == "y"`, `!(annotations["x"] == "y")`, `user == "alice" || annotations["x"] == "y"`,
	`user == "alice" && annotations["x"] == "y"`, `stage == "ResponseComplete"`, `stage != "ResponseComplete" && code >= 400`,
	`stage == "Panic" || user == "bob"`, `!(stage == "Panic") && verb == "get"`, `"x" in annotations`,
	`size(name) > 5`, `name.matches("^pod-0[0-9]$")`, `user.startsWith(verb)`, `code + 1 == 201`,
	`int(latency) > 1000000000`, `string(code) == "200"`, `[user, verb].exists(x, x == "get")`, `has(annotations.x)`,
	`dyn(code) == 200`, `code == dyn(200)`,
}

func TestCompileWhereMatchesCEL(t *testing.T) {
	s := openWhereStore(t)
	all := allRecords(t, s)
	if len(all) != len(whereRecords()) {
		t.Fatalf("read %d records, want %d", len(all), len(whereRecords()))
	}
	for _, expr := range differentialExprs {
		checkAgainstCEL(t, s, all, mustFilter(t, expr))
	}
}

// FuzzCompileWhere checks, for any filter CEL accepts, that the store yields
// exactly the records CEL matches.
func FuzzCompileWhere(f *testing.F) {
	for _, expr := range differentialExprs {
		f.Add(expr)
	}
	s := openWhereStore(f) // once per fuzz worker
	all := allRecords(f, s)
	f.Fuzz(func(t *testing.T, expr string) {
		flt, err := timeline.CompileFilter(expr)
		if err != nil {
			t.Skip()
		}
		checkAgainstCEL(t, s, all, flt)
	})
}

func TestCompileWhereUsesIndexes(t *testing.T) {
	s := openWhereStore(t)
	tests := []struct{ expr, index string }{
		{`user == "alice"`, "record_user (user=?)"},
		{`user.startsWith("system:node:")`, "record_user (user=?)"},
		{`user in ["alice", "bob"]`, "record_user (user=?)"},
		{`code >= 500`, "record_error (code>?)"},
		{`code == 404`, "record_error (code=?)"},
		{`code in [500, 503]`, "record_error (code=?)"},
		{`code == 500 || code == 503`, "record_error"},
		{`resource == "pods" && verb in ["get", "list"]`, "record_resource (resource=? AND verb=?)"},
		{`ns == "default" && name == "web-1"`, "record_object (namespace=? AND name=?)"},
		{`reason == "BackOff"`, "record_reason (reason=?)"},
		{`reason.startsWith("Fail")`, "record_reason (reason=?)"},
		{`time > timestamp("2026-05-01T10:05:00Z")`, "record_time_key (time_ns>?)"},
		{`time >= timestamp("2026-05-01T10:00:00Z") && time < timestamp("2026-05-01T11:00:00Z")`,
			"record_time_key (time_ns>? AND time_ns<?)"},
		{`user == "alice" && annotations["x"] == "y"`, "record_user (user=?)"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			q, args, _ := recordQuery(timeline.Query{Where: mustFilter(t, tt.expr)})
			rows, err := s.db.Query("EXPLAIN QUERY PLAN "+q, args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			want := "SEARCH r USING INDEX " + tt.index
			for _, line := range plan {
				if strings.HasPrefix(line, "SEARCH r USING ") && strings.Contains(line, "INDEX "+tt.index) {
					return
				}
			}
			t.Errorf("plan does not %s:\n%s\n%s", want, strings.Join(plan, "\n"), q)
		})
	}
}

// randomFilter builds a random filter from the atoms compileWhere knows and
// some it does not, with constants near the values held and the boundaries.
func randomFilter(rng *rand.Rand, depth int) string {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	if depth > 0 && rng.IntN(3) > 0 {
		a, b := randomFilter(rng, depth-1), randomFilter(rng, depth-1)
		switch rng.IntN(5) {
		case 0:
			return "!(" + a + ")"
		case 1:
			return "(" + a + " || " + b + ")"
		case 2:
			return "(" + randomFilter(rng, depth-1) + " ? " + a + " : " + b + ")"
		}
		return "(" + a + " && " + b + ")"
	}
	strs := []string{`""`, `"alice"`, `"Alice"`, `"bob"`, `"system:node:"`, `"system:node:n1"`, `"system:nodes"`, `"get"`,
		`"nobody"`, `"s"`, `"a%b_c*d'e"`, `"%"`, `"_"`, `"'"`, `"x\x00y"`, `"\x00"`, `"ü"`, `"café-ü"`, `"日本"`, `"ユ"`,
		`"bad"`, `"\xc3"`, `"\u00ff"`, `"pod-0"`, `"web-1"`, `"BackOff"`, `"default"`, `"/api/"`, `"n1"`, `"-"`, `"e"`}
	strFields := []string{"source", "group", "version", "resource", "subresource", "kind", "ns", "name", "uid", "verb",
		"reason", "user", "userAgent", "sourceIP", "type", "level", "auditID", "requestURI", "message"}
	ops := []string{"==", "!=", "<", "<=", ">", ">="}
	times := []string{"0001-01-01T00:00:00Z", "1677-09-21T00:12:43.145224192Z", "1677-09-21T00:12:43.145224191Z", "1960-01-01T00:00:00Z",
		"1969-12-31T23:59:59Z", "1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000000001Z", "2026-05-01T10:00:00Z",
		"2026-05-01T10:00:01.000000001Z", "2026-05-01T12:04:00+02:00", "2200-01-01T00:00:00Z", "2262-04-11T23:47:16.854775807Z",
		"2262-04-11T23:47:16.854775808Z", "9999-12-31T23:59:59.999999999Z"}
	durs := []string{"0s", "1ns", "-1s", "5ms", "1s", "500ms", "2h", "-2562047h47m16.854775808s"}
	ints := []string{"0", "200", "399", "400", "404", "429", "500", "503", "-1", "1", "2", "10",
		"9223372036854775807", "-9223372036854775808"}
	list := func(xs []string, wrap func(string) string) string {
		n := rng.IntN(4)
		var el []string
		for range n {
			el = append(el, wrap(pick(xs...)))
		}
		return "[" + strings.Join(el, ", ") + "]"
	}
	id := func(s string) string { return s }
	switch rng.IntN(16) {
	case 0, 1, 2:
		return pick(strFields...) + " " + pick(ops...) + " " + pick(strs...)
	case 3:
		return pick(strs...) + " " + pick(ops...) + " " + pick(strFields...)
	case 4, 5:
		return pick(strFields...) + "." + pick("startsWith", "endsWith", "contains") + "(" + pick(strs...) + ")"
	case 6:
		return pick(strFields...) + " in " + list(strs, id)
	case 7:
		f := pick("code", "code", "run", "line")
		if rng.IntN(4) == 0 {
			return f + " in " + list(ints, id)
		}
		if rng.IntN(4) == 0 {
			return pick(ints...) + " " + pick(ops...) + " " + f
		}
		return f + " " + pick(ops...) + " " + pick(ints...)
	case 8:
		ts := func(s string) string { return `timestamp("` + s + `")` }
		if rng.IntN(5) == 0 {
			return "time in " + list(times, ts)
		}
		return "time " + pick(ops...) + " " + ts(pick(times...))
	case 9:
		d := func(s string) string { return `duration("` + s + `")` }
		if rng.IntN(5) == 0 {
			return "latency in " + list(durs, d)
		}
		return "latency " + pick(ops...) + " " + d(pick(durs...))
	case 10:
		return pick(strFields...) + " " + pick(ops...) + " " + pick(strFields...)
	case 11:
		return pick("code", "run", "line") + " " + pick(ops...) + " " + pick("code", "run", "line")
	case 12:
		return pick("true", "false", `1 < 2`, `"a" == "b"`)
	case 13:
		return pick(`stage == "ResponseComplete"`, `stage == ""`, `annotations["x"] == "y"`,
			`annotations["authorization.k8s.io/decision"] == "allow"`, `size(name) > 5`, `"x" in annotations`)
	case 14:
		return pick(`user.startsWith(verb)`, `name.matches("^pod")`, `code + 0 == 200`, `dyn(code) == 200`)
	}
	return pick(strFields...) + " " + pick(ops...) + " " + pick(strs...)
}

func TestCompileWhereRandomFilters(t *testing.T) {
	s := openWhereStore(t)
	all := allRecords(t, s)
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for range n {
		expr := randomFilter(rng, 3)
		f, err := timeline.CompileFilter(expr)
		if err != nil {
			t.Fatalf("generated filter %s: %v", expr, err)
		}
		checkAgainstCEL(t, s, all, f)
	}
}

// TestCompileWhereLimits guards against filters whose SQL SQLite would refuse
// (expression depth, number of placeholders): they fall back to CEL.
func TestCompileWhereLimits(t *testing.T) {
	s := openWhereStore(t)
	all := allRecords(t, s)
	deep := `user == "alice"`
	for range maxWhereDepth + 20 {
		deep = "!(" + deep + ")"
	}
	verbs := make([]string, maxWhereArgs+1)
	for i := range verbs {
		verbs[i] = strconv.Quote(strconv.FormatInt(int64(i), 36)) // short: CEL limits filters to 100k code points
	}
	verbs[len(verbs)-1] = `"get"`
	for _, tt := range []struct {
		name, expr string
		complete   bool
	}{
		{"deep", deep, false},
		{"deep conjunct", deep + ` && code == 200`, false},
		{"many args", "verb in [" + strings.Join(verbs, ",") + "]", false},
		{"many args conjunct", `code == 200 && verb in [` + strings.Join(verbs, ",") + "]", false},
		{"args at limit", "verb in [" + strings.Join(verbs[1:], ",") + "]", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFilter(t, tt.expr)
			if _, _, complete := compileWhere(f.Expr()); complete != tt.complete {
				t.Errorf("complete = %v, want %v", complete, tt.complete)
			}
			checkAgainstCEL(t, s, all, f)
		})
	}
}

// TestFieldColumns: every column mapping names a filter field, and every
// mapped field becomes a SQL condition, so a renamed field cannot silently
// lose its index.
func TestFieldColumns(t *testing.T) {
	known := map[string]bool{}
	for _, f := range timeline.Fields {
		known[f.Name] = true
	}
	for name := range fieldColumns {
		if !known[name] {
			t.Errorf("fieldColumns[%q]: no such filter field in timeline.Fields", name)
		}
		if _, ok := whereFields[name]; !ok {
			t.Errorf("field %q has a column but no SQL condition (its type has no column kind)", name)
		}
	}
	for _, rowOnly := range []string{"stage", "annotations", "bad"} {
		if _, ok := whereFields[rowOnly]; ok {
			t.Errorf("field %q is evaluated row by row, yet has a column", rowOnly)
		}
	}
}
