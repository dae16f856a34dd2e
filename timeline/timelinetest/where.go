package timelinetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline"
)

// The filter fixture: a fixed set of varied records, filters with the
// records they match, and generators of filters, on which each store
// checks its translation of filters to SQL against CEL (Filter.Match on
// every record).

// WhereT0 is the time most test records cluster around.
var WhereT0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// annotations is the extra of a record with these annotations (key, value,
// ...).
func annotations(kv ...string) []byte {
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

// podRef names a pod.
func podRef(ns, name string) timeline.ObjectRef {
	return timeline.ObjectRef{Version: "v1", Resource: "pods", Kind: "Pod", Namespace: ns, Name: name}
}

// generatedRecords are n audit records whose fields cycle through a few
// values each.
func generatedRecords(n int) []timeline.Record {
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	users := []string{"alice", "system:node:n1", "system:kube-scheduler", "bob", ""}
	codes := []int{0, 200, 201, 404, 429, 500, 409}
	var recs []timeline.Record
	for i := range n {
		recs = append(recs, timeline.Record{
			AuditID: fmt.Sprintf("gen-%02d", i), Time: WhereT0.Add(time.Duration(i) * 17 * time.Second), Source: timeline.SourceAudit,
			Object: podRef([]string{"default", "prod", ""}[i%3], fmt.Sprintf("pod-%02d", i)), Verb: verbs[i%len(verbs)],
			User: users[i%len(users)], Code: codes[i%len(codes)],
			Latency: time.Duration(i*37) * time.Millisecond, Stages: timeline.Stage(1 << (i % 4)), Level: []string{"Metadata", "Request"}[i%2],
			URI: fmt.Sprintf("/api/v1/pods/pod-%02d", i),
		})
	}
	return recs
}

// WhereRecords is the fixed data the filter tests of the stores run on. AuditID labels each
// record, so expectations read as names; it is unique and never empty.
func WhereRecords() []timeline.Record {
	ms := time.Millisecond
	ann, pod := annotations, podRef
	audit, event := timeline.SourceAudit, timeline.SourceEvent
	done := timeline.StageResponseComplete
	recs := []timeline.Record{
		{AuditID: "get-pod", Time: WhereT0, Source: audit, Object: pod("default", "web-1"), Verb: "get", User: "alice",
			UserAgent: "kubectl/v1.30.0", SourceIP: "10.0.0.1", Code: 200, Level: "Metadata", Latency: 5 * ms, Stages: done,
			URI: "/api/v1/namespaces/default/pods/web-1", Extra: ann("authorization.k8s.io/decision", "allow", "x", "y")},
		{AuditID: "list-pods-n1", Time: WhereT0.Add(time.Minute), Source: audit, Object: timeline.ObjectRef{Version: "v1", Resource: "pods"},
			Verb: "list", User: "system:node:n1", UserAgent: "kubelet/v1.30.0", SourceIP: "10.0.1.1", Code: 200, Level: "Metadata",
			Latency: 120 * ms, Stages: done, URI: "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1"},
		{AuditID: "watch-node-n2", Time: WhereT0.Add(2 * time.Minute), Source: audit,
			Object: timeline.ObjectRef{Version: "v1", Resource: "nodes", Name: "n2"}, Verb: "watch", User: "system:node:n2",
			UserAgent: "kubelet/v1.30.0", SourceIP: "10.0.1.2", Code: 200, Level: "Metadata", Latency: 30 * time.Minute,
			Stages: timeline.StageResponseStarted | done, URI: "/api/v1/nodes?watch=true"},
		{AuditID: "create-forbidden", Time: WhereT0.Add(3 * time.Minute), Source: audit,
			Object: timeline.ObjectRef{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "prod", Name: "api"}, Verb: "create",
			User: "bob", UserAgent: "kubectl/v1.29.1", SourceIP: "192.168.0.7", Code: 403, Level: "RequestResponse",
			Latency: 2 * ms, Stages: done, Message: `deployments.apps is forbidden: User "bob" cannot create`,
			Extra: ann("authorization.k8s.io/decision", "forbid")},
		{AuditID: "get-404", Time: WhereT0.Add(4 * time.Minute), Source: audit,
			Object: timeline.ObjectRef{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "missing"}, Verb: "get",
			User: "alice", UserAgent: "kubectl/v1.30.0", SourceIP: "10.0.0.1", Code: 404, Level: "Metadata",
			Latency: time.Second, Stages: done, Message: `configmaps "missing" not found`},
		{AuditID: "throttled-429", Time: WhereT0.Add(5 * time.Minute), Source: audit, Object: pod("kube-system", "coredns-x"),
			Verb: "update", User: "system:serviceaccount:kube-system:replicaset-controller", UserAgent: "kube-controller-manager/v1.30.0",
			Code: 429, Level: "Request", Latency: 0, Stages: done},
		{AuditID: "patch-500", Time: WhereT0.Add(6 * time.Minute), Source: audit,
			Object: timeline.ObjectRef{Version: "v1", Resource: "nodes", Subresource: "status", Name: "n1"}, Verb: "patch",
			User: "system:node:n1", UserAgent: "kubelet/v1.30.0", Code: 500, Level: "Metadata", Latency: 2 * time.Hour,
			Stages: done, Message: "etcdserver: request timed out"},
		{AuditID: "delete-503", Time: WhereT0.Add(7 * time.Minute), Source: audit, Object: pod("prod", "api-7f9c"),
			Verb: "delete", User: "system:node:", Code: 503, Level: "Metadata", Latency: 10 * time.Second, Stages: timeline.StagePanic},
		{AuditID: "ev-backoff", Time: WhereT0.Add(8 * time.Minute), Source: event, Object: pod("default", "web-1"),
			Reason: "BackOff", Type: "Warning", Message: "Back-off restarting failed container"},
		{AuditID: "ev-failedscheduling", Time: WhereT0.Add(9 * time.Minute), Source: event, Object: pod("prod", "api-7f9c"),
			Reason: "FailedScheduling", Type: "Warning", Message: "0/3 nodes are available: 3 Insufficient cpu."},
		{AuditID: "ev-scheduled", Time: WhereT0.Add(10 * time.Minute), Source: event, Object: pod("default", "web-1"),
			Reason: "Scheduled", Type: "Normal", Message: "Successfully assigned default/web-1 to n1"},
		{AuditID: "unicode", Time: WhereT0.Add(11 * time.Minute), Source: audit, Object: pod("日本", "café-ü"), Verb: "get",
			User: "ユーザー", Code: 200, Latency: 7 * ms, Stages: done, Message: "🚀 launched ünïcødé", URI: "/api/v1/namespaces/日本/pods/café-ü"},
		{AuditID: "wildcards", Time: WhereT0.Add(12 * time.Minute), Source: audit, Object: pod("default", `a%b_c*d'e`),
			Verb: "get", User: "Alice", Code: 201, Stages: done, URI: `/x?q=%25_*'"[a]`, Message: `50% of _all_ *'s "quoted"`},
		{AuditID: "zero-time", Source: audit},
		{AuditID: "before-epoch", Time: time.Unix(-1, 0), Source: audit, Verb: "get", Code: 200},
		{AuditID: "in-1960", Time: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), Source: event, Reason: "Ancient", Latency: -time.Second},
		{AuditID: "epoch", Time: time.Unix(0, 0), Source: audit, Verb: "list"},
		{AuditID: "epoch-plus-1ns", Time: time.Unix(0, 1), Source: audit, Verb: "list"},
		{AuditID: "nul-bytes", Time: WhereT0.Add(13 * time.Minute), Source: audit, Object: pod("default", "x\x00y"), Verb: "get",
			User: "nul\x00user", Message: "nul\x00byte", URI: "/a\x00b", Code: 200},
		{AuditID: "bad-utf8", Time: WhereT0.Add(14 * time.Minute), Source: audit, Object: pod("default", "bad\xc3("),
			UserAgent: "\xff\xfe-agent", Message: "bad\xc3(", URI: "/\xff", Code: 200},
		{AuditID: "uppercase", Time: WhereT0.Add(15 * time.Minute), Source: audit, Object: pod("DEFAULT", "WEB-1"), Verb: "GET",
			User: "ALICE", Code: 200},
		{AuditID: "system-nodes", Time: WhereT0.Add(16 * time.Minute), Source: audit, Verb: "list", User: "system:nodes", Code: 200},
		{AuditID: "received-only", Time: WhereT0.Add(17 * time.Minute), Source: audit, Object: pod("default", "web-2"), Verb: "create",
			User: "alice", Stages: timeline.StageRequestReceived},
		{AuditID: "same-ns-name", Time: WhereT0.Add(18 * time.Minute), Source: audit,
			Object: timeline.ObjectRef{Resource: "namespaces", Namespace: "kube-public", Name: "kube-public"}, Verb: "get", User: "get", Code: 200},
		{AuditID: "dup-time", Time: WhereT0, Source: audit, Object: pod("default", "web-1"), Verb: "get", User: "alice", Code: 200},
		{AuditID: "far-future", Time: time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC), Source: event, Reason: "Future"},
		{AuditID: "ns-resolution", Time: WhereT0.Add(time.Second + 1), Source: audit, Verb: "get", Code: 200, Latency: 1},
	}
	recs = append(recs, generatedRecords(16)...)
	for i := range recs {
		recs[i].Key = "where\x00" + recs[i].AuditID
		recs[i].Evidence.Line = int64(i + 1)
	}
	return recs
}

// AddWhereRecords writes WhereRecords to s in one batch, alternating
// between two ingest runs.
func AddWhereRecords(tb testing.TB, s timeline.Appender) {
	tb.Helper()
	ctx := context.Background()
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
	for i, r := range WhereRecords() {
		r.Evidence.Run = runs[i%2]
		if res, err := b.AddRecord(ctx, &r); err != nil || res != timeline.Added {
			tb.Fatalf("add %s: %v, %v", r.AuditID, res, err)
		}
	}
	if err := b.Commit(ctx, nil); err != nil {
		tb.Fatal(err)
	}
}

// AddRecords writes recs to s in one batch of a run of its own, and
// returns the run's id.
func AddRecords(tb testing.TB, s timeline.Appender, recs ...timeline.Record) int64 {
	tb.Helper()
	run := &timeline.IngestRun{Source: timeline.SourceAudit, Path: "records.log"}
	inBatch(tb, s, run, func(ctx context.Context, b timeline.Batch) {
		for _, r := range recs {
			if _, err := b.AddRecord(ctx, &r); err != nil {
				tb.Fatalf("add %s: %v", r.Key, err)
			}
		}
	})
	return run.ID
}

// inBatch begins run on s and commits one batch, which add fills.
func inBatch(tb testing.TB, s timeline.Appender, run *timeline.IngestRun, add func(context.Context, timeline.Batch)) {
	tb.Helper()
	ctx := context.Background()
	if err := s.BeginRun(ctx, run); err != nil {
		tb.Fatal(err)
	}
	b, err := s.Batch(ctx, run.ID)
	if err != nil {
		tb.Fatal(err)
	}
	add(ctx, b)
	if err := b.Commit(ctx, nil); err != nil {
		tb.Fatal(err)
	}
}

// ReadAll reads every record, in the order Records yields them.
func ReadAll(tb testing.TB, s timeline.Reader) []*timeline.Record {
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

// Labels returns the labels (AuditID) of the records s yields for q, in
// order.
func Labels(tb testing.TB, s timeline.Reader, q timeline.Query) []string {
	tb.Helper()
	var out []string
	for r, err := range s.Records(context.Background(), q) {
		if err != nil {
			tb.Fatalf("%s: %v", q.Where, err)
		}
		out = append(out, r.AuditID)
	}
	return out
}

// CELLabels returns the labels of the records CEL alone matches, in order:
// the oracle. A record on which the filter fails at run time does not match.
func CELLabels(all []*timeline.Record, f *timeline.Filter) []string {
	var out []string
	for _, r := range all {
		if ok, _ := f.Match(r); ok {
			out = append(out, r.AuditID)
		}
	}
	return out
}

// MustFilter compiles a filter a test spells.
func MustFilter(tb testing.TB, expr string) *timeline.Filter {
	tb.Helper()
	f, err := timeline.CompileFilter(expr)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// WhereCase is a filter and the labels of WhereRecords it matches, in any
// order.
type WhereCase struct {
	Expr string
	Want []string
}

// WhereCases are filters a store must translate right, each with what it
// matches: the byte-wise string tests, the boundaries of time, the forms
// folded to constants, and parts only CEL evaluates.
func WhereCases() []WhereCase {
	alice := []string{"get-pod", "get-404", "received-only", "dup-time", "gen-00", "gen-05", "gen-10", "gen-15"}
	return []WhereCase{
		{`user == "alice"`, alice},
		{`"alice" == user && verb == "get"`, []string{"get-pod", "get-404", "dup-time", "gen-00"}},
		{`user == "nobody"`, nil},
		{`user != "nobody" && code == 403`, []string{"create-forbidden"}},
		{`!(user == "nobody") && code == 403`, []string{"create-forbidden"}},
		{`user.startsWith("system:node:")`,
			[]string{"list-pods-n1", "watch-node-n2", "patch-500", "delete-503", "gen-01", "gen-06", "gen-11"}},
		{`user.startsWith("system:node")`,
			[]string{"list-pods-n1", "watch-node-n2", "patch-500", "delete-503", "gen-01", "gen-06", "gen-11", "system-nodes"}},
		{`name.contains("%") || name.contains("_") || name.contains("'")`, []string{"wildcards"}},
		{`name.startsWith("a%")`, []string{"wildcards"}},
		{`name.startsWith("a_")`, nil}, // LIKE would match
		{`name.endsWith("-ü")`, []string{"unicode"}},
		{`name.contains("\x00")`, []string{"nul-bytes"}},
		{`message.contains("\u0000")`, []string{"nul-bytes"}},
		{`message.startsWith("bad")`, []string{"bad-utf8"}},
		{`message.startsWith("bad\xc3")`, nil}, // "\xc3" is U+00C3 in a CEL string: two bytes
		{`requestURI.endsWith("[a]")`, []string{"wildcards"}},
		// The empty uid does not end with "x" (SQLite's substr() of an empty BLOB is NULL).
		{`!uid.endsWith("x") && code == 403`, []string{"create-forbidden"}},
		{`requestURI.startsWith("/api/v1/namespaces/")`, []string{"get-pod", "unicode"}},
		{`ns == "日本" && name.startsWith("caf")`, []string{"unicode"}},
		{`userAgent.startsWith("kubelet/")`, []string{"list-pods-n1", "watch-node-n2", "patch-500"}},
		{`sourceIP == "10.0.0.1"`, []string{"get-pod", "get-404"}},
		{`group == "apps" || subresource == "status"`, []string{"create-forbidden", "patch-500"}},
		{`kind == "Pod" && level == "Request"`,
			[]string{"throttled-429", "gen-01", "gen-03", "gen-05", "gen-07", "gen-09", "gen-11", "gen-13", "gen-15"}},
		{`verb in ["watch", "patch"] && code >= 500`, []string{"patch-500", "gen-05", "gen-12"}},
		{`verb in ["get", "GET"] && ns == "DEFAULT"`, []string{"uppercase"}},
		{`resource == "pods" && verb in ["get", "list"]`, []string{"get-pod", "list-pods-n1", "unicode", "wildcards",
			"nul-bytes", "dup-time", "gen-00", "gen-01", "gen-07", "gen-08", "gen-14", "gen-15"}},
		{`user in []`, nil},
		{`code in [404, 429] && source == "audit"`,
			[]string{"get-404", "throttled-429", "gen-03", "gen-04", "gen-10", "gen-11"}},
		{`!(code in [0, 200, 201])`, []string{"create-forbidden", "get-404", "throttled-429", "patch-500", "delete-503",
			"gen-03", "gen-04", "gen-05", "gen-06", "gen-10", "gen-11", "gen-12", "gen-13"}},
		{`code >= 500`, []string{"patch-500", "delete-503", "gen-05", "gen-12"}},
		{`500 < code`, []string{"delete-503"}},
		{`code >= -9223372036854775808 && code == 0 && verb == "create"`, []string{"received-only"}},
		{`true && code == 429`, []string{"throttled-429", "gen-04", "gen-11"}},
		{`false || user == "bob"`, []string{"create-forbidden", "gen-03", "gen-08", "gen-13"}},
		{`1 < 2 && name.startsWith("") && code == 403`, []string{"create-forbidden"}},
		{`code == 200 ? verb == "list" : verb == "watch"`,
			[]string{"list-pods-n1", "system-nodes", "gen-01", "gen-08", "gen-15", "gen-02", "gen-09"}},
		{`time < timestamp("1970-01-01T00:00:00Z")`, []string{"in-1960", "before-epoch", "zero-time"}},
		{`time >= timestamp("1970-01-01T00:00:00Z") && time < timestamp("2026-05-01T10:00:01Z")`,
			[]string{"epoch", "epoch-plus-1ns", "get-pod", "dup-time", "gen-00"}},
		{`time > timestamp("2100-01-01T00:00:00Z")`, []string{"far-future"}},
		{`time == timestamp("0001-01-01T00:00:00Z")`, []string{"zero-time"}},
		{`time <= timestamp("1600-01-01T00:00:00Z")`, []string{"zero-time"}},
		{`time == timestamp("1970-01-01T00:00:00Z")`, []string{"epoch"}}, // the epoch is a time, not "no time"
		{`time == timestamp("2026-05-01T12:00:01.000000001+02:00")`, []string{"ns-resolution"}},
		{`time in [timestamp("2026-05-01T10:00:00Z"), timestamp("0001-01-01T00:00:00Z")]`,
			[]string{"get-pod", "dup-time", "gen-00", "zero-time"}},
		{`latency > duration("1h")`, []string{"patch-500"}},
		{`latency < duration("0s")`, []string{"in-1960"}},
		{`latency >= duration("500ms") && latency < duration("1s")`, []string{"gen-14", "gen-15"}},
		{`reason == "BackOff" || reason == "Scheduled"`, []string{"ev-backoff", "ev-scheduled"}},
		{`ns == name`, []string{"list-pods-n1", "zero-time", "before-epoch", "in-1960", "epoch", "epoch-plus-1ns",
			"system-nodes", "same-ns-name", "far-future", "ns-resolution"}},
		{`user == verb`, []string{"same-ns-name", "zero-time", "bad-utf8", "in-1960", "ev-backoff", "ev-failedscheduling",
			"ev-scheduled", "far-future"}},
		{`user > "system:node:n1"`, []string{"watch-node-n2", "system-nodes", "throttled-429", "unicode"}},
		{`!(user >= "b") && user != ""`, append([]string{"wildcards", "uppercase"}, alice...)},
		{`uid == "" && auditID == "get-pod"`, []string{"get-pod"}},
		{`auditID >= "w"`, []string{"watch-node-n2", "wildcards", "zero-time"}},
		{`run == 1 && line <= 3`, []string{"get-pod", "watch-node-n2"}},
		{`type == "Warning" && stage == ""`, []string{"ev-backoff", "ev-failedscheduling"}},
		{`stage == "Panic"`, []string{"delete-503", "gen-03", "gen-07", "gen-11", "gen-15"}},
		{`annotations["authorization.k8s.io/decision"] == "forbid"`, []string{"create-forbidden"}},
		{`user == "alice" && (annotations["x"] == "y" || code == 404)`, []string{"get-pod", "get-404", "gen-10"}},
		{`size(name) == 6 && ns == "default"`, []string{"gen-00", "gen-03", "gen-06", "gen-09", "gen-12", "gen-15"}},
	}
}

// WhereExprs cover every operator, its negation and its mirror, on
// every kind of field, mixed with parts that only CEL can evaluate. They are
// also fuzz seeds.
var WhereExprs = []string{
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

// RandomFilter builds a random filter from the atoms the stores translate and
// some it does not, with constants near the values held and the boundaries.
func RandomFilter(rng *rand.Rand, depth int) string {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	if depth > 0 && rng.IntN(3) > 0 {
		a, b := RandomFilter(rng, depth-1), RandomFilter(rng, depth-1)
		switch rng.IntN(5) {
		case 0:
			return "!(" + a + ")"
		case 1:
			return "(" + a + " || " + b + ")"
		case 2:
			return "(" + RandomFilter(rng, depth-1) + " ? " + a + " : " + b + ")"
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

// RandomFilters calls check on n filters of RandomFilter, the same n every
// run (a fixed seed).
func RandomFilters(tb testing.TB, n int, check func(*timeline.Filter)) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	for range n {
		expr := RandomFilter(rng, 3)
		f, err := timeline.CompileFilter(expr)
		if err != nil {
			tb.Fatalf("generated filter %s: %v", expr, err)
		}
		check(f)
	}
}

// FuzzFilters calls check on every filter CEL accepts that the fuzzer
// makes, seeded with WhereExprs, the filters of WhereCases and more.
func FuzzFilters(f *testing.F, check func(t *testing.T, flt *timeline.Filter), more ...string) {
	for _, expr := range WhereExprs {
		f.Add(expr)
	}
	for _, c := range WhereCases() {
		f.Add(c.Expr)
	}
	for _, expr := range more {
		f.Add(expr)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		flt, err := timeline.CompileFilter(expr)
		if err != nil {
			t.Skip()
		}
		check(t, flt)
	})
}
