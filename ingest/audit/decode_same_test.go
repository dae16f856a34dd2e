package audit

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/faultline/faultline/timeline"
)

// outcome is everything decode and toRecord make of one line.
type outcome struct {
	Err      string
	Formats  []Format
	Records  []*timeline.Record
	RecErrs  []string
	Versions [][]*timeline.ObjectVersion
}

func newOutcome(line []byte) outcome {
	return outcomeOf(line, decode, toRecord)
}

func oldOutcome(line []byte) outcome {
	return outcomeOf(line, oldDecode, oldToRecord)
}

func outcomeOf(line []byte, dec func([]byte) ([]event, error),
	rec func(*event, []byte) (*timeline.Record, []*timeline.ObjectVersion, error)) outcome {
	// Each side gets its own copy: the fast path reads the line in place.
	line = append([]byte(nil), line...)
	var o outcome
	evs, err := dec(line)
	if err != nil {
		o.Err = err.Error()
		return o
	}
	for i := range evs {
		o.Formats = append(o.Formats, evs[i].format)
		r, vs, err := rec(&evs[i], line)
		if err != nil {
			o.RecErrs = append(o.RecErrs, err.Error())
			continue
		}
		o.Records = append(o.Records, r)
		o.Versions = append(o.Versions, vs)
	}
	// Scribble over the line: nothing kept may point into it.
	for i := range line {
		line[i] = 'X'
	}
	return o
}

// sameLines are the lines TestDecodeSame checks: the generator's sample,
// the shared real samples, and the bad and enveloped lines of the other
// tests.
func sameLines(t testing.TB) [][]byte {
	var lines [][]byte
	add := func(s string) { lines = append(lines, []byte(s)) }
	fh, err := os.Open(filepath.Join("testdata", "auditgen-rr30.log.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		add(sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(sharedSamples, "*"))
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for l := range strings.SplitSeq(string(b), "\n") {
			add(l)
		}
	}
	for _, s := range sameCases {
		add(s)
	}
	return lines
}

// sameCases are lines on which encoding/json's rules go beyond a plain
// reading: the fast path must decline them or read them alike.
var sameCases = []string{
	// envelopes
	`{"properties":{"log":{"kind":"Event","auditID":"a1","verb":"get","requestReceivedTimestamp":"2026-05-01T10:00:00Z"}},"time":"2026-05-01T10:00:01Z"}`,
	`{"properties":{"log":"{\"kind\":\"Event\",\"auditID\":\"a2\",\"verb\":\"get\"}"},"time":"2026-05-01T10:00:01Z"}`,
	`{"properties":{"log":null}}`,
	`{"properties":{},"kind":"Event","auditID":"a3","verb":"get","requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"properties":{"Log":"x"}}`,
	`{"properties":{"log":"{}","log":"{}"}}`,
	`{"properties":"x"}`,
	`{"properties":{"log":"{\"kind\":\"Event\",\"auditID\":\"a4\",\"verb\":\"get\",\"requestReceivedTimestamp\":\"2026-05-01T10:00:00Z\"}"},"items":"x"}`,
	`{"properties":{"log":"{\"kind\":\"Event\",\"auditID\":\"a5\",\"verb\":\"get\",\"requestReceivedTimestamp\":\"2026-05-01T10:00:00Z\"}"},"time":5}`,
	`{"kind":"EventList","items":[]}`,
	`{"kind":"EventList"}`,
	`{"kind":"EventList","items":null}`,
	`{"items":[` + goodLine("i1") + `,{"kind":"Event"}]}`,
	`{"items":[` + goodLine("i2") + `,"x"]}`,
	`{"items":{}}`,
	`{"kind":"EventList","items":[{"kind":"EventList","items":[{"kind":"EventList","items":[{"kind":"EventList","items":[{"kind":"EventList","items":[` + goodLine("i3") + `]}]}]}]}]}`,
	`{"logEvents":[{"id":"1","message":"` + strings.ReplaceAll(goodLine("l1"), `"`, `\"`) + `"},{"message":"` + strings.ReplaceAll(goodLine("l2"), `"`, `\"`) + `"}]}`,
	`{"logEvents":[null]}`,
	`{"logEvents":[{"message":5}]}`,
	`{"logEvents":[{"Message":"{}"}]}`,
	`{"logEvents":[],"events":[{"message":"` + strings.ReplaceAll(goodLine("l3"), `"`, `\"`) + `"}]}`,
	`{"events":[{"message":"2026-05-01T10:00:00Z ` + strings.ReplaceAll(goodLine("l4"), `"`, `\"`) + `"}]}`,
	`{"message":"` + strings.ReplaceAll(goodLine("m1"), `"`, `\"`) + `","timestamp":1714557600000}`,
	`{"message":"x","kind":"Event","auditID":"m2","verb":"get","requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"message":null}`,
	`{"message":` + goodLine("m3") + `}`,
	goodLine("plain"),
	bigLine("rr", 4000),
	`{"kind":"Event","auditID":"t1","verb":"get","user":{"username":"u"`,
	`{"kind":"Event","auditID":"w1","verb":"get","user":"bob","requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"w2","verb":"get","responseStatus":{"code":"200"},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"d1","verb":"get","requestReceivedTimestamp":"2026-13-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"d2","verb":"get"}`,
	`{"kind":"Pod","metadata":{"name":"p"}}`,
	`{"kind":"EventList","items":[` + goodLine("a") + `,` + goodLine("b") + `]}`,
	`{"properties":{"log":"{\"kind\":\"Event\",\"auditID\":\"x\",\"verb\":\"get\",\"requestReceivedTimestamp\":\"2026-05-01T10:00:00Z\"}"},"time":"2026-05-01T10:00:01Z"}`,
	`{"protoPayload":{"methodName":"io.k8s.core.v1.pods.create","resourceName":"core/v1/namespaces/ml/pods/p/binding","status":{"code":8}},"timestamp":"2026-05-01T10:00:00Z","insertId":"i"}`,
	`{"logEvents":[{"message":"{\"kind\":\"Event\",\"verb\":\"get\",\"requestReceivedTimestamp\":\"2026-05-01T10:00:00Z\"}"}]}`,
	`2026-05-01T10:00:00Z ` + goodLine("s3"),
	// case, duplicates, escapes, nulls
	`{"Kind":"Event","AUDITID":"c1","Verb":"get","requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"c2","verb":"get","verb":"list","requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"c3","verb":"get","user":{"username":"a"},"user":{"groups":["g"]},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","audit\u0049D":"c4","verb":"get","requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"c5","verb":"g\u00e9t \ud800 \"q\" <a&b>","userAgent":"caf` + "\xc3\xa9 \xff" + `","requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":null,"auditID":"c6","verb":null,"user":null,"objectRef":null,"responseStatus":null,"requestObject":null,"annotations":null,"sourceIPs":null,"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"c7","verb":"get","annotations":{"b":"2","a":"1","c":null,"x<y":"p&q\u2028"},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"c8","verb":"get","annotations":{"a":"1","a":"2"},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"c9","verb":"get","annotations":{"a":1},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"n1","verb":"get","responseStatus":{"code":2e2},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"n2","verb":"get","responseStatus":{"code":-0,"reason":"NotFound"},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"n3","verb":"get","responseStatus":{"code":99999999999999999999},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"u1","verb":"get","user":{"username":"system:serviceaccount:ml:w","extra":{"authentication.kubernetes.io/pod-name":["p1"],"authentication.kubernetes.io/pod-name":["p2"]}},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"u2","verb":"get","user":{"username":"system:serviceaccount:ml:w","extra":{"authentication.kubernetes.io/pod-name":[null]}},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"u3","verb":"get","user":{"username":"system:serviceaccount:ml:w","extra":{"x":[1]}},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"u4","verb":"get","impersonatedUser":{"username":"i"},"sourceIPs":["1.1.1.1","2.2.2.2"],"user":{"groups":["a","b"]},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"t2","verb":"get","timestamp":1714557600000,"stageTimestamp":"2026-05-01T10:00:00.5Z"}`,
	`{"kind":"Event","auditID":"t3","verb":"get","timestamp":"2026-05-01T10:00:00+02:00"}`,
	`{"kind":"Event","auditID":"t4","verb":"get","requestReceivedTimestamp":"2024-02-29T23:59:59.123456789Z"}`,
	`{"kind":"Event","auditID":"t5","verb":"get","requestReceivedTimestamp":"2025-02-29T23:59:59Z"}`,
	`{"kind":"Event","auditID":"t6","verb":"get","requestReceivedTimestamp":"2026-05-01T10:00:00.1234567891Z"}`,
	`{"kind":"Event","auditID":"t7","verb":"get","requestReceivedTimestamp":"2026-05-01T24:00:00Z"}`,
	`{"kind":"Event","auditID":"t8","verb":"get","requestReceivedTimestamp":"1600-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"t9","verb":"get","time":5,"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","level":"RequestResponse","auditID":"o1","verb":"create","objectRef":{"resource":"pods","namespace":"ml"},"requestObject":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","uid":"u"}},"responseObject":{"kind":"Status"},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","level":"RequestResponse","auditID":"o2","verb":"list","objectRef":{"resource":"pods"},"responseObject":{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"a"}},{"metadata":{"name":""}},null,5,{"kind":"Pod","metadata":{"name":"b","Name":"c"}}]},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","level":"RequestResponse","auditID":"o3","verb":"update","objectRef":{"resource":"pods"},"requestObject":{"kind":5,"metadata":{"name":"a"}},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","level":"Request","auditID":"o4","verb":"create","objectRef":{"resource":"pods"},"requestObject":{"KIND":"Pod","metadata":{"name":"a"},"metadata":{"namespace":"b"}},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","level":"Request","auditID":"o5","verb":"create","objectRef":{"resource":"pods"},"requestObject":{"kind":"Pod","metadata":{"name":"a\u00e9"}},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","level":"Request","auditID":"o6","verb":"create","objectRef":{"resource":"pods"},"requestObject":null,"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"e1","verb":"get","responseStatus":{"code":500,"message":"` + strings.Repeat("é", 600) + `"},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"auditID":"k1","verb":"get","requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"k2","verb":"get","requestReceivedTimestamp":"2026-05-01T10:00:00Z"}  `,
	`{"kind":"Event","auditID":"k3","verb":"get","requestReceivedTimestamp":"2026-05-01T10:00:00Z"} x`,
	`{"kind":"Event","auditID":"k4","verb":"get","requestReceivedTimestamp":"2026-05-01T10:00:00Z","n":01}`,
	`{"kind":"Event","auditID":"k5","verb":"get","requestReceivedTimestamp":"2026-05-01T10:00:00Z","s":"a	b"}`,
	`{"kind":"Event","auditID":"k6","verb":"get","requestReceivedTimestamp":"2026-05-01T10:00:00Z","deep":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	`{"kind":"Event","auditID":"k7","verb":"get","requestReceivedTimestamp":"2026-05-01T10:00:00Z","deep":` + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + `}`,
	`{"kind":"Event","auditID":"k8","verb":"get","stage":"Sideways","requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
	`{"kind":"Event","auditID":"k9","verb":"get","stage":"ResponseStarted","level":"None","requestURI":"/x?a=\u0026b","requestReceivedTimestamp":"2026-05-01T10:00:00Z"}`,
}

// TestDecodeSame checks the fast path against the encoding/json decoder it
// replaced: the same events, records, versions and errors, line by line.
func TestDecodeSame(t *testing.T) {
	fast := 0
	lines := sameLines(t)
	for i, line := range lines {
		want, got := oldOutcome(line), newOutcome(line)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("line %d %.200q: (-old +new)\n%s", i, line, diff)
		}
		if l := trimmed(line); len(l) > 0 && l[0] == '{' {
			if _, ok := fastEvent(l); ok {
				fast++
			}
		}
	}
	// The generator's lines and plain real ones must take the fast path.
	if fast < 200 {
		t.Errorf("the fast path read %d of %d lines, want at least the generator's 200", fast, len(lines))
	}
}

func trimmed(b []byte) []byte { return []byte(strings.TrimSpace(string(b))) }

// FuzzDecodeSame checks that the fast path gives what encoding/json gave on
// every line: the same events, records and versions where the old decoder
// accepted the line, the same error where it refused it.
func FuzzDecodeSame(f *testing.F) {
	seedLines(f)
	for _, l := range sameLines(f) {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		want, got := oldOutcome(line), newOutcome(line)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-old +new)\n%s", diff)
		}
	})
}

// TestAppendString checks the hand-written JSON string encoder against
// encoding/json's.
func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "<a>&", "\b\f\n\r\t\x00\x1f\x7f", "é✓", "\u2028\u2029", "\xff\xfe a \xc3", "\xed\xa0\x80"} {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

// FuzzAppendString checks the JSON string encoder on any text.
func FuzzAppendString(f *testing.F) {
	f.Add("<script>\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// FuzzParseUTC checks the timestamp fast path against time.Parse.
func FuzzParseUTC(f *testing.F) {
	for _, s := range []string{"2026-05-01T10:00:00.123456Z", "2026-05-01T10:00:00Z", "2024-02-29T23:59:59.999999999Z",
		"2025-02-29T00:00:00Z", "2026-05-01T10:00:60Z", "2026-05-01T10:00:00.Z", "0000-01-01T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseUTC(s)
		if !ok {
			return
		}
		want, err := oldParseTime("f", s)
		if err != nil {
			if timeline.CheckTime(got) == nil {
				t.Fatalf("parseUTC(%q) = %v, time.Parse: %v", s, got, err)
			}
			return
		}
		if !got.Equal(want) || got.Location() != want.Location() {
			t.Fatalf("parseUTC(%q) = %v, want %v", s, got, want)
		}
	})
}

// TestEventKeyIndex checks the switch against the table it stands for.
func TestEventKeyIndex(t *testing.T) {
	for i, k := range eventKeys {
		key := gjson.Parse(`{"` + k + `":1}`)
		key.ForEach(func(key, _ gjson.Result) bool {
			if got := eventKeyIndex(key); got != i {
				t.Errorf("eventKeyIndex(%q) = %d, want %d", k, got, i)
			}
			return false
		})
	}
}

// fastEvent is fastDecode for a line that must be one plain event.
func fastEvent(line []byte) (event, bool) {
	evs, ok := fastDecode(line, maxDepth)
	if !ok || len(evs) != 1 || evs[0].format != FormatEvent {
		return event{}, false
	}
	return evs[0], true
}
