package timeline

import (
	"testing"
	"time"
)

// FuzzCompileFilter: any expression compiles or is refused with an error,
// and a compiled one evaluates on a record without a panic.
func FuzzCompileFilter(f *testing.F) {
	for _, s := range []string{
		`code == 429`, `user.startsWith("system:serviceaccount:") && code in [401, 403]`,
		`latency > duration("5s")`, `time > timestamp("2026-01-01T00:00:00Z")`,
		`annotations["authorization.k8s.io/decision"] == "forbid"`, `1/0 == 1`, `size(message) > 3`,
		`verb == "list" || verb == "watch" || verb == "get"`, `ns.matches("^ml-.*")`,
	} {
		f.Add(s)
	}
	r := &Record{Time: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), Source: SourceAudit, Verb: "list", User: "alice",
		Code: 429, Latency: time.Second, Message: "m", Object: ObjectRef{Resource: "pods", Namespace: "ml"},
		Extra: []byte(`{"annotations":{"a":"b"},"pod":"ml/p"}`)}
	f.Fuzz(func(t *testing.T, expr string) {
		flt, err := CompileFilter(expr)
		if err != nil {
			return
		}
		_, _ = flt.Match(r)
		_ = flt.Expr()
	})
}
