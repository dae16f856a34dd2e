package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

var bt0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func mark(kind timeline.BisectKind, at time.Duration, note string) timeline.BisectMark {
	return timeline.BisectMark{Kind: kind, Time: bt0.Add(at), Note: note}
}

func TestCheckMark(t *testing.T) {
	marks := []timeline.BisectMark{mark(timeline.BisectGood, time.Minute, ""), mark(timeline.BisectBad, 5*time.Minute, "")}
	tests := []struct {
		name    string
		m       timeline.BisectMark
		wantErr string
	}{
		{"good inside", mark(timeline.BisectGood, 3*time.Minute, ""), ""},
		{"good before last good", mark(timeline.BisectGood, 0, ""), ""},
		{"bad inside", mark(timeline.BisectBad, 2*time.Minute, ""), ""},
		{"bad after first bad", mark(timeline.BisectBad, time.Hour, ""), ""},
		{"skip anywhere", mark(timeline.BisectSkip, time.Hour, ""), ""},
		{"good after bad", mark(timeline.BisectGood, 6*time.Minute, ""),
			"a good instant must be before the bad one: good 2026-05-01T10:06:00Z is after bad 2026-05-01T10:05:00Z"},
		{"good at bad", mark(timeline.BisectGood, 5*time.Minute, ""),
			"a good instant must be before the bad one: good 2026-05-01T10:05:00Z is the same instant as bad 2026-05-01T10:05:00Z"},
		{"bad before good", mark(timeline.BisectBad, 0, ""),
			"a bad instant must be after the good one: bad 2026-05-01T10:00:00Z is before good 2026-05-01T10:01:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkMark(marks, tt.m)
			got := ""
			if err != nil {
				got = err.Error()
				if _, ok := errors.AsType[*usageError](err); !ok {
					t.Errorf("error %v is not a usage error (exit 2)", err)
				}
			}
			if got != tt.wantErr {
				t.Errorf("checkMark = %q, want %q", got, tt.wantErr)
			}
		})
	}
}

func TestBisectLogRoundTrip(t *testing.T) {
	marks := []timeline.BisectMark{
		mark(timeline.BisectBad, 10*time.Minute, "CrashLoopBackOff # on 3 workers"),
		mark(timeline.BisectGood, 1500*time.Millisecond, ""),
		mark(timeline.BisectSkip, 5*time.Minute, "gap"),
	}
	log := bisectLog(marks)
	want := `faultline bisect start
faultline bisect bad 2026-05-01T10:10:00Z  # CrashLoopBackOff # on 3 workers
faultline bisect good 2026-05-01T10:00:01.5Z
faultline bisect skip 2026-05-01T10:05:00Z  # gap
`
	if diff := cmp.Diff(want, log); diff != "" {
		t.Fatalf("bisectLog (-want +got)\n%s", diff)
	}
	lines, err := parseBisectLog("bisect.log", strings.NewReader("# saved\n\n"+log))
	if err != nil {
		t.Fatal(err)
	}
	wantLines := []logLine{
		{line: 3, start: true},
		{line: 4, kind: timeline.BisectBad, instant: "2026-05-01T10:10:00Z", note: "CrashLoopBackOff # on 3 workers"},
		{line: 5, kind: timeline.BisectGood, instant: "2026-05-01T10:00:01.5Z"},
		{line: 6, kind: timeline.BisectSkip, instant: "2026-05-01T10:05:00Z", note: "gap"},
	}
	if diff := cmp.Diff(wantLines, lines, cmp.AllowUnexported(logLine{})); diff != "" {
		t.Errorf("parseBisectLog (-want +got)\n%s", diff)
	}
}

func TestParseBisectLogErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"git bisect good x\n", `b.log:1: want a bisect command (faultline bisect start|good|bad|skip ...), got "git bisect good x"`},
		{"faultline bisect start\nfaultline bisect maybe 5m\n", `b.log:2: unknown bisect command "maybe": want start, good, bad or skip`},
		{"faultline bisect good\n", `b.log:1: want one instant after "good" (a note follows a #), got 0 words`},
		{"faultline bisect good 5m --note x\n", `b.log:1: want one instant after "good" (a note follows a #), got 3 words`},
		{"faultline bisect start --bad end\n", `b.log:1: start takes no arguments in a log, got "--bad"`},
	}
	for _, tt := range tests {
		_, err := parseBisectLog("b.log", strings.NewReader(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("parseBisectLog(%q) = %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestParseInstant(t *testing.T) {
	end := bt0.Add(time.Hour)
	for in, want := range map[string]time.Time{
		"end": end, "now": end, "15m": end.Add(-15 * time.Minute),
		"2026-05-01T12:03:00+02:00": bt0.Add(3 * time.Minute),
	} {
		got, err := parseInstant("", in, end)
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("parseInstant(%q) = %v, %v; want %v in UTC", in, got, err, want)
		}
	}
	// Out of the range a timeline holds: stored, these wrapped (9999 read
	// back as 1816) and printed a negative window.
	for _, in := range []string{"", "10:03", "yesterday", "9999-12-31T23:59:59Z", "1677-01-01T00:00:00Z", "10000000h"} {
		if _, err := parseInstant("bad", in, end); err == nil {
			t.Errorf("parseInstant(%q) gave no error", in)
		}
	}
}

func TestGroupVersions(t *testing.T) {
	v := func(kind, ns, name string, at time.Duration) timeline.ObjectVersion {
		return timeline.ObjectVersion{Object: timeline.ObjectRef{Kind: kind, Namespace: ns, Name: name}, Time: bt0.Add(at)}
	}
	got := groupVersions([]timeline.ObjectVersion{
		v("ConfigMap", "ml", "env", 0), v("Node", "", "gpu-1", time.Minute), v("ConfigMap", "ml", "env", 2*time.Minute),
		v("Deployment", "ml", "trainer", time.Minute),
	})
	want := []versionGroup{
		{kind: "Deployment", name: "ml/trainer", n: 1, first: bt0.Add(time.Minute), last: bt0.Add(time.Minute),
			latest: v("Deployment", "ml", "trainer", time.Minute)},
		{kind: "Node", name: "gpu-1", n: 1, first: bt0.Add(time.Minute), last: bt0.Add(time.Minute),
			latest: v("Node", "", "gpu-1", time.Minute)},
		{kind: "ConfigMap", name: "ml/env", n: 2, first: bt0, last: bt0.Add(2 * time.Minute),
			latest: v("ConfigMap", "ml", "env", 2*time.Minute)},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(versionGroup{})); diff != "" {
		t.Errorf("groupVersions (-want +got)\n%s", diff)
	}
}
