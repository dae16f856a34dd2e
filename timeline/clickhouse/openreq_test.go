package clickhouse

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

// A remembered request comes back as it went in, but for what the set
// does not keep (Key, Bad).
func TestOpenSetRoundTrip(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 0, 0, 13549000, time.UTC)
	full := timeline.Record{ID: 123456789, Time: at, Source: timeline.SourceAudit,
		Object: timeline.ObjectRef{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs", Subresource: "status",
			Kind: "MPIJob", Namespace: "llm-pretrain", Name: "job-0042", UID: "8f3c2a9e-1d2b-4c5d-9e8f-0a1b2c3d4e5f"},
		Verb: "watch", Reason: "Forbidden", User: "system:node:node-0246", UserAgent: "kubelet/v1.37.2 (linux/amd64)",
		SourceIP: "10.20.1.16", Code: 200, Type: "Warning", Level: "Metadata", Latency: 330 * time.Second,
		Stages: timeline.StageRequestReceived | timeline.StageResponseStarted, AuditID: "9933f0ae-00b6-4128-a9be-9ef314972323",
		URI: "/api/v1/nodes?watch=true&fieldSelector=metadata.name%3Dnode-0246", Message: "héllo\x00\n",
		Extra:    json.RawMessage(`{"annotations":{"authorization.k8s.io/decision":"allow"}}`),
		Evidence: timeline.Evidence{Run: 7, Line: 10_000_001}}
	long := strings.Repeat("x", 300)
	tests := []struct {
		name string
		r    timeline.Record
	}{
		{"every field", full},
		{"the zero record", timeline.Record{Time: time.Unix(0, 0).UTC()}},
		{"no time", timeline.Record{Time: fromNS(noTime), Stages: timeline.StageRequestReceived}},
		{"negative numbers", timeline.Record{ID: -1, Time: at, Code: -1, Latency: -time.Nanosecond,
			Evidence: timeline.Evidence{Run: -5, Line: -9}}},
		{"long strings", timeline.Record{Time: at, User: long, URI: long + long, Extra: json.RawMessage(long)}},
	}
	var o openSet
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.r
			in.Key, in.Bad = "natural key", true
			for i := range 2 { // the second time, its words are in the dictionary
				k := openKey{t: int64(i), key: 99}
				copied := i == 1
				o.put(k, &in, copied)
				got, ok := o.get(k)
				if !ok {
					t.Fatal("not found")
				}
				if got.key != 99 || !got.held || got.heldCopied != copied || got.dirty || got.rq != nil {
					t.Errorf("row: key %d held %v heldCopied %v (want %v) dirty %v rq %v",
						got.key, got.held, got.heldCopied, copied, got.dirty, got.rq)
				}
				if diff := cmp.Diff(tt.r, *got.r); diff != "" {
					t.Errorf("round %d (-put +got):\n%s", i, diff)
				}
			}
		})
	}
}

// Past the dictionary's bound, strings are packed inline and come back
// all the same; the words held keep their ids.
func TestOpenSetDictionaryFull(t *testing.T) {
	var o openSet
	o.put(openKey{key: 1}, &timeline.Record{Verb: "get"}, false)
	for i := len(o.words); i < maxWords; i++ {
		o.appendWord(nil, "w"+strconv.Itoa(i))
	}
	if len(o.words) != maxWords {
		t.Fatalf("%d words, want %d", len(o.words), maxWords)
	}
	r := timeline.Record{Verb: "get", User: "a user never seen", Extra: json.RawMessage(`{"new":1}`)}
	o.put(openKey{key: 2}, &r, false)
	if len(o.words) != maxWords {
		t.Errorf("the dictionary grew past its bound: %d words", len(o.words))
	}
	got, ok := o.get(openKey{key: 2})
	if !ok {
		t.Fatal("not found")
	}
	if diff := cmp.Diff(r, *got.r, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("(-put +got):\n%s", diff)
	}
}

// The set is bounded: past maxOpen it starts again.
func TestOpenSetBounded(t *testing.T) {
	var o openSet
	for i := range maxOpen + 1 {
		o.put(openKey{t: int64(i)}, &timeline.Record{}, false)
	}
	if o.len() != 1 {
		t.Errorf("%d requests remembered after %d, want 1", o.len(), maxOpen+1)
	}
	if _, ok := o.get(openKey{t: maxOpen}); !ok {
		t.Error("the last request put is not remembered")
	}
}

// A packed request is a small part of its decoded form: the reason it is
// packed. A watch's record as the generator writes it packs into less
// than 256 bytes once its words are known (its URI alone is 150).
func TestOpenSetPackedSize(t *testing.T) {
	r := timeline.Record{ID: 4_000_000, Time: time.Date(2026, 5, 1, 10, 0, 0, 13549000, time.UTC),
		Source: timeline.SourceAudit, Object: timeline.ObjectRef{Version: "v1", Resource: "nodes", Name: "node-0246"},
		Verb: "watch", User: "system:node:node-0246", UserAgent: "kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef0",
		SourceIP: "10.20.1.16", Code: 200, Level: "Metadata", Latency: 2 * time.Millisecond,
		Stages: timeline.StageResponseStarted, AuditID: "9933f0ae-00b6-4128-a9be-9ef314972323",
		URI:      "/api/v1/nodes?allowWatchBookmarks=true&fieldSelector=metadata.name%3Dnode-0246&resourceVersion=2165208124&timeout=5m30s&timeoutSeconds=330&watch=true",
		Extra:    json.RawMessage(`{"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}`),
		Evidence: timeline.Evidence{Run: 1, Line: 4_500_000}}
	var o openSet
	o.put(openKey{key: 1}, &r, false)
	o.put(openKey{key: 2}, &r, true)
	if n := len(o.m[openKey{key: 2}]); n >= 256 {
		t.Errorf("a watch packs into %d bytes, want < 256", n)
	}
}

// The set reads only what it packed; bytes of another form are refused,
// never read past their end.
func FuzzOpenSetUnpack(f *testing.F) {
	var o openSet
	o.put(openKey{}, &timeline.Record{Verb: "get", URI: "/api", Extra: json.RawMessage(`{}`)}, true)
	f.Add(o.m[openKey{}])
	f.Add("")
	f.Add("\x02\x02\x02\x02\x02\x02\x02\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")
	f.Fuzz(func(t *testing.T, p string) {
		r, copied, err := o.unpack(p)
		if err != nil {
			return
		}
		// What unpacks packs back to the same record.
		o.put(openKey{key: 1}, r, copied)
		r2, ok := o.get(openKey{key: 1})
		if !ok {
			t.Fatal("a record unpacked does not round-trip")
		}
		if diff := cmp.Diff(r, r2.r); diff != "" || r2.heldCopied != copied {
			t.Errorf("copied %v, then %v (-first +second):\n%s", copied, r2.heldCopied, diff)
		}
	})
}

// A request of a megabyte packs and unpacks, and the buffer it grew is not
// kept for the next.
func TestOpenSetScratchBounded(t *testing.T) {
	var o openSet
	r := timeline.Record{Time: time.Unix(0, 0).UTC(), URI: strings.Repeat("u", 1<<20)}
	o.put(openKey{}, &r, false)
	if c := cap(o.scratch); c > maxScratch {
		t.Errorf("a %d-byte buffer kept, want at most %d", c, maxScratch)
	}
	got, ok := o.get(openKey{})
	if !ok {
		t.Fatal("not found")
	}
	if diff := cmp.Diff(r, *got.r); diff != "" {
		t.Errorf("(-put +got):\n%s", diff)
	}
}
