package audit

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// seedLines adds every line of the shared real samples, and the envelopes
// of TestSamplesInEveryEnvelopeMapAlike, as seeds.
func seedLines(f *testing.F) {
	f.Add([]byte(goodLine("seed")))
	f.Add([]byte(`{"kind":"EventList","items":[` + goodLine("a") + `,` + goodLine("b") + `]}`))
	f.Add([]byte(`{"properties":{"log":"{\"kind\":\"Event\",\"auditID\":\"x\",\"verb\":\"get\",\"requestReceivedTimestamp\":\"2026-05-01T10:00:00Z\"}"}}`))
	f.Add([]byte(`{"protoPayload":{"methodName":"io.k8s.core.v1.pods.create","resourceName":"core/v1/namespaces/ml/pods/p/binding","status":{"code":8}},"timestamp":"2026-05-01T10:00:00Z","insertId":"i"}`))
	f.Add([]byte(`{"logEvents":[{"message":"{\"kind\":\"Event\",\"verb\":\"get\",\"requestReceivedTimestamp\":\"2026-05-01T10:00:00Z\"}"}]}`))
	f.Add([]byte(`2026-05-01T10:00:00Z ` + goodLine("s3")))
	f.Add([]byte(bigLine("rr", 2000)))
	// Issue 15: a truncated first line (once taken for a whole document),
	// and a lone bracket opening a pretty-printed one.
	f.Add([]byte(`{"kind":"Event","auditID":"t1","verb":"get","user":{"username":"u"`))
	f.Add([]byte(`{`))
	f.Add([]byte(`{"kind":"EventList","items":[`))
	files, _ := filepath.Glob(filepath.Join(sharedSamples, "*"))
	for _, path := range files {
		fh, err := os.Open(path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			f.Add(append([]byte(nil), sc.Bytes()...))
		}
		fh.Close()
	}
}

// FuzzDecode checks that no line, however broken, panics the decoder or the
// record mapping, and that every failure is a named field error.
func FuzzDecode(f *testing.F) {
	seedLines(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		evs, err := decode(line)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field == "" || fe.Problem == "" {
				t.Fatalf("decode error without a field: %#v", err)
			}
			return
		}
		for i := range evs {
			r, vs, err := toRecord(&evs[i], line)
			if err != nil {
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Field == "" {
					t.Fatalf("record error without a field: %#v", err)
				}
				continue
			}
			if r.Key == "" || r.Time.IsZero() {
				t.Fatalf("record without key or time: %+v", r)
			}
			for _, v := range vs {
				if len(v.Content) == 0 {
					t.Fatalf("version without content")
				}
			}
		}
	})
}

// FuzzAKSEnvelope wraps arbitrary text as the JSON string an AKS diagnostic
// log carries in properties.log.
func FuzzAKSEnvelope(f *testing.F) {
	f.Add(goodLine("aks"))
	f.Add(`{"kind":"Event"`)
	f.Add(`"nested"`)
	f.Fuzz(func(t *testing.T, log string) {
		line := `{"category":"kube-audit","properties":{"log":` + strconv.Quote(log) + `}}`
		if _, err := decode([]byte(line)); err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("unnamed error: %v", err)
			}
		}
	})
}

// FuzzGKEResource checks the Cloud Logging resourceName parser.
func FuzzGKEResource(f *testing.F) {
	for _, s := range []string{"core/v1/namespaces/default/pods/p/status", "apps/v1/deployments", "readyz", "core/v1/namespaces/ns",
		"", "/", "v1/v1/v1", "batch/v1/namespaces/a/jobs/j/x/y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		ref, uri := gkeResource(name)
		if uri == "" || uri[0] != '/' {
			t.Fatalf("uri %q does not start with /", uri)
		}
		if ref != nil && ref.Resource == "" {
			t.Fatalf("resource path %q gave an empty resource", name)
		}
	})
}

// FuzzCloudWatch wraps arbitrary text as a CloudWatch message.
func FuzzCloudWatch(f *testing.F) {
	f.Add(goodLine("cw"))
	f.Add(`2026-05-01T10:00:00Z {"kind":"Event"}`)
	f.Fuzz(func(t *testing.T, msg string) {
		line := `{"logEvents":[{"id":"1","timestamp":1,"message":` + strconv.Quote(msg) + `}]}`
		if _, err := decode([]byte(line)); err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("unnamed error: %v", err)
			}
		}
	})
}
