package timelinetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// PodExtras are extras on which a store that reads less of extra for
// timeline.FieldPod could go wrong: the audit ingester's form, keys that
// fold to "pod", escapes, nesting, invalid JSON, and each with what
// Record.Pod reads from it whole.
var PodExtras = []struct{ Extra, Pod string }{
	{"", ""},
	{`{"annotations":{"authorization.k8s.io/decision":"allow"},"groups":["system:authenticated"],"pod":"ns/p1"}`, "ns/p1"},
	{`{"pod":"ns/p2"}`, "ns/p2"},
	{`{"pod":""}`, ""},
	{`{"format":"v1","grpcCode":14,"sourceIPs":["10.0.0.1"],"pod":"ns/grpc"}`, "ns/grpc"},
	{`{"annotations":{},"groups":[],"pod":"ns/empty-members"}`, "ns/empty-members"},
	{`{"POD":"ns/upper"}`, "ns/upper"},
	{`{"pod":"ns/a","Pod":"ns/b"}`, "ns/b"},
	{`{"Pod":"ns/b","pod":"ns/a"}`, "ns/a"},
	{`{"p\u006fd":"ns/escaped-key"}`, "ns/escaped-key"},
	{`{"x":"\u0041","pod":"ns/escape-before"}`, "ns/escape-before"},
	{`{"annotations":{"pod":"nested"}}`, ""},
	{`{"pod":"ns/outer","x":{"pod":"ns/nested"}}`, "ns/outer"},
	{`{"x":{"pod":"ns/nested"},"pod":"ns/outer"}`, "ns/outer"},
	{`{"annotations":{"x":"y"},"pod":"ns/space"} `, "ns/space"},
	{`{"a":tru,"pod":"ns/invalid"}`, ""},
	{`{"a":01,"pod":"ns/invalid-number"}`, ""},
	{`{"a":"` + "\x01" + `","pod":"ns/control"}`, ""},
	{`{"a":"` + "\xff" + `","pod":"ns/bad-utf8-elsewhere"}`, "ns/bad-utf8-elsewhere"},
	{`{"pod":"ns/ünï"}`, "ns/ünï"},
	{`{"pod":"a\"b"}`, `a"b`},
	{`{"pod":"<a&b>"}`, "<a&b>"},
	{`{"pod":123}`, ""},
	{`{"pod":null,"x":"y"}`, ""},
	{`{"pod":"ns/true","b":true}`, "ns/true"},
	{`{"b":true,"pod":"ns/after-true"}`, "ns/after-true"},
	{`{"x":1.5,"pod":"ns/after-float"}`, "ns/after-float"},
	{`{"x":[1],"pod":"ns/after-number-array"}`, "ns/after-number-array"},
	{`{"x":"a,\"pod\":\"fake","pod":"ns/real"}`, "ns/real"},
	{`{"x":"\",\"pod\":\"fake\"}"}`, ""},
	{`["pod"]`, ""},
	{`{"pod":"ns/truncated"`, ""},
	{`{"groups":["a","b"],"pod":"ns/p1"}{"pod":"ns/second"}`, ""},
	{`not json at all, "pod":"x"}`, ""},
}

// CheckPodField: a read with timeline.FieldPod and without FieldExtra
// yields Extra as timeline.PodExtra of what Record.Pod reads from the
// whole extra, whether the field is asked of every record or of some
// (FieldsWhere); a read with both yields extra whole. s is empty.
func CheckPodField(t *testing.T, s interface {
	timeline.Appender
	timeline.Reader
}) {
	t.Helper()
	var recs []timeline.Record
	for i, e := range PodExtras {
		var extra []byte
		if e.Extra != "" {
			extra = []byte(e.Extra)
		}
		recs = append(recs, timeline.Record{Key: fmt.Sprintf("pod\x00%02d", i), AuditID: fmt.Sprintf("pod-%02d", i),
			Time: WhereT0.Add(time.Duration(i) * time.Second), Source: timeline.SourceAudit,
			Object: podRef("ns", fmt.Sprintf("p-%02d", i)), Verb: "get", Code: []int{429, 200}[i%2], Extra: extra})
	}
	AddRecords(t, s, recs...)
	whole, byLabel := map[int64]*timeline.Record{}, map[string]*timeline.Record{}
	for _, r := range ReadAll(t, s) {
		whole[r.ID], byLabel[r.AuditID] = r, r
	}
	for i, e := range PodExtras {
		r := byLabel[fmt.Sprintf("pod-%02d", i)]
		if r == nil {
			t.Fatalf("record pod-%02d not read", i)
		}
		if got := r.Pod(); got != e.Pod {
			t.Errorf("extra %q: Pod() = %q, want %q", e.Extra, got, e.Pod)
		}
	}
	for _, tc := range []struct {
		name string
		q    timeline.Query
		pod  func(*timeline.Record) bool // which records get the pod
	}{
		{"pod", timeline.Query{Fields: timeline.FieldCode | timeline.FieldPod}, func(*timeline.Record) bool { return true }},
		{"pod where code 429", timeline.Query{Fields: timeline.FieldCode,
			FieldsWhere: &timeline.FieldsWhere{Fields: timeline.FieldPod, Where: MustFilter(t, "code == 429")}},
			func(r *timeline.Record) bool { return r.Code == 429 }},
		{"pod where code 429, filtered", timeline.Query{Where: MustFilter(t, `verb == "get"`), Fields: timeline.FieldCode,
			FieldsWhere: &timeline.FieldsWhere{Fields: timeline.FieldPod, Where: MustFilter(t, "code == 429")}},
			func(r *timeline.Record) bool { return r.Code == 429 }},
		{"pod, residual filter", timeline.Query{Where: MustFilter(t, `verb.matches("^g") && code >= 0`), Fields: timeline.FieldPod},
			func(*timeline.Record) bool { return true }},
		{"pod and annotations", timeline.Query{Where: MustFilter(t, `!("x" in annotations) || code >= 0`), Fields: timeline.FieldPod},
			func(*timeline.Record) bool { return true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			for r, err := range s.Records(context.Background(), tc.q) {
				if err != nil {
					t.Fatal(err)
				}
				w := whole[r.ID]
				if w == nil {
					t.Fatalf("record %d not read whole", r.ID)
				}
				n++
				var want []byte
				if tc.pod(r) {
					want = timeline.PodExtra(w.Pod())
				}
				if diff := cmp.Diff(string(want), string(r.Extra)); diff != "" {
					t.Errorf("extra %q (-want +got)\n%s", w.Extra, diff)
				}
				if tc.pod(r) && r.Pod() != w.Pod() {
					t.Errorf("extra %q: Pod() = %q, want %q", w.Extra, r.Pod(), w.Pod())
				}
			}
			if n != len(PodExtras) {
				t.Errorf("%d records read, want %d", n, len(PodExtras))
			}
		})
	}
	for r, err := range s.Records(context.Background(), timeline.Query{Fields: timeline.FieldPod | timeline.FieldExtra}) {
		if err != nil {
			t.Fatal(err)
		}
		if w := whole[r.ID]; w == nil {
			t.Errorf("record %d not read whole", r.ID)
		} else if string(r.Extra) != string(w.Extra) {
			t.Errorf("with FieldExtra, extra %q, want %q", r.Extra, w.Extra)
		}
	}
}
