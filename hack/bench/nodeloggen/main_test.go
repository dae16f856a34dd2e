package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/hack/bench/internal/gencmd"
	"github.com/faultline/faultline/ingest/nodelogs"
)

// lineOf writes one line of the format and returns it without its newline.
func lineOf(t *testing.T, g *gen, hit bool) string {
	t.Helper()
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	if g.o.format == "journal" {
		g.journalLine(w, hit)
	} else {
		g.dmesgLine(w, hit)
	}
	w.Flush()
	g.tick()
	return strings.TrimSuffix(b.String(), "\n")
}

// message is what faultline matches: MESSAGE of a journal entry, the text
// after the timestamp of a dmesg line.
func message(t *testing.T, format, line string) string {
	t.Helper()
	if format == "dmesg" {
		ts, msg, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("no timestamp in %q", line)
		}
		if _, err := time.Parse("2006-01-02T15:04:05,000000-07:00", ts); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		return msg
	}
	var e map[string]string // journalctl -o json: every value a string
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	for _, f := range []string{"__REALTIME_TIMESTAMP", "_HOSTNAME", "SYSLOG_IDENTIFIER", "_TRANSPORT", "MESSAGE"} {
		if e[f] == "" {
			t.Fatalf("%q: no %s", line, f)
		}
	}
	return e["MESSAGE"]
}

// Every line meant to be kept is one that faultline keeps, every other line
// one that it drops, and the kept ones cover every reason.
func TestLinesMatchAsMeant(t *testing.T) {
	for _, format := range []string{"journal", "dmesg"} {
		t.Run(format, func(t *testing.T) {
			g := newGen(options{format: format, seed: 7, node: "gpu-0086", start: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), rate: 50, hits: 0.5})
			reasons := map[string]int{}
			for i := range 20_000 {
				hit := i%2 == 0
				msg := message(t, format, lineOf(t, g, hit))
				m, ok := nodelogs.Classify(msg)
				if ok != hit {
					t.Fatalf("Classify(%q) = %v, want %v", msg, ok, hit)
				}
				if ok {
					reasons[m.Reason]++
				}
			}
			want := []string{"Xid", "NVLink", "ECC", "OOMKill", "ConntrackFull", "LinkDown", "LinkUp"}
			if format == "journal" {
				want = append(want, "PLEG", "KubeletEviction", "NCCLTimeout", "NCCLSystemError", "NCCLRemoteError")
			}
			for _, r := range want {
				if reasons[r] == 0 {
					t.Errorf("no %s line in 10,000 hits: %v", r, reasons)
				}
			}
		})
	}
}

// The same flags give the same bytes, and -hits is the share kept.
func TestDeterministicAndShare(t *testing.T) {
	o := options{format: "journal", lines: 50_000, seed: 3, node: "gpu-0001", start: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), rate: 50, hits: 0.01}
	var a, b bytes.Buffer
	st, err := write(context.Background(), &a, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := write(context.Background(), &b, o); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two runs with the same flags differ")
	}
	if n := bytes.Count(a.Bytes(), []byte("\n")); n != o.lines || st.lines != o.lines {
		t.Fatalf("%d lines (stats %d), want %d", n, st.lines, o.lines)
	}
	if st.hits < 400 || st.hits > 600 {
		t.Errorf("%d lines kept of %d, want about 1 %%", st.hits, o.lines)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-format", "syslog"}, {"-hits", "2"}, {"-start", "yesterday"}, {"extra"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != gencmd.ExitUsage || !strings.Contains(errb.String(), "Try: nodeloggen") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}
