package timeline

import (
	"strings"
	"testing"
)

func TestPod(t *testing.T) {
	tests := []struct {
		extra, want string
	}{
		{`{"annotations":{"a":"b"},"groups":["g"],"pod":"ml/w-1"}`, "ml/w-1"},
		{`{"annotations":{"a":"b"}}`, ""},
		{`{"pod":"ml/w-1","POD":"ml/w-2"}`, "ml/w-2"},
		{`{"pod":"ml/w-1","pod":null}`, "ml/w-1"},
		{`{"pod":"ml/w-1","pod":7}`, "ml/w-1"},
		{`{"pod":7,"pod":"ml/w-1"}`, "ml/w-1"},
		{`{"p\u006fd":"ml/w-\u0031"}`, "ml/w-1"},
		{`{"pod":"ml/w-1"`, ""},
		{`{"x\"pod":"ml/w-1"}`, ""},
		{`["pod"]`, ""},
		{``, ""},
	}
	for _, tt := range tests {
		r := &Record{Extra: []byte(tt.extra)}
		if got := r.Pod(); got != tt.want {
			t.Errorf("Pod(%s) = %q, want %q", tt.extra, got, tt.want)
		}
	}
	// The form the audit ingester writes takes the fast path.
	if pod, ok := podFast([]byte(`{"annotations":{"a":"b"},"groups":["g"],"pod":"ml/w-1"}`)); !ok || pod != "ml/w-1" {
		t.Errorf("the common form: %q, %v; want ml/w-1, true", pod, ok)
	}
}

// FuzzPodSame holds Pod's fast path to encoding/json on any extra.
func FuzzPodSame(f *testing.F) {
	for _, s := range []string{
		`{"annotations":{"a":"b"},"groups":["g"],"pod":"ml/w-1"}`,
		`{"pod":"ml/w-1","Pod":"ml/w-2"}`,
		`{"pod":"ml/w-1","pod":null}`,
		`{"pod":"ml/w-1","pod":[1]}`,
		`{"p\u006fd":"x"}`,
		`{"pod":"a\"b"}`,
		`{"pod":"a\u0000b"}`,
		"{\"pod\":\"a\xffb\"}",
		"{\"pod\":\"a\tb\"}",
		`{"pod":"x"} y`,
		`{"pod":"x","n":1e400}`,
		`{"x":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `,"pod":"x"}`,
		`{"ſod":"x"}`,
		`{"a":"x,\"pod\":\"y"}`,
		`{"a":{"pod":"y"}}`,
		`{"a":["pod","y"]}`,
		`{"pod":"x","pod":"y"}`,
		`{"pod":"x","pod":"y\\"}`,
		` {"pod":"y"}`,
		`{"pod":"y"} `,
		`{"pod":"y"}}`,
		`{"a":1,"pod":""}`,
		`{"x\"pod":"y"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, extra []byte) {
		r := &Record{Extra: extra}
		if got, want := r.Pod(), podStd(extra); got != want {
			t.Errorf("%q: %q, encoding/json %q", extra, got, want)
		}
	})
}
