package nodelogs

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/faultline/faultline/ingest/input"
)

// textLines are real text lines of each format (docs/nodelogs.md).
var textLines = []string{
	"2026-12-01T15:31:03,878276+00:00 NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
	"2026-12-01T15:31:03.878276123Z [rank3]:[E1201 15:31:21.500000 4242 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600046 milliseconds before timing out.",
	"[Tue Dec  1 15:31:30 2026] Out of memory: Killed process 777 (python) total-vm:1kB, anon-rss:1kB",
	"[ 3600.000001] bond0: (slave eth1): link status definitely down, disabling slave",
	"<4>[ 3601.250000] EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0)",
	"2026-12-01T15:31:03+0000 nf_conntrack: nf_conntrack: table full, dropping packet",
	"NVRM: Xid (PCI:0000:3b:00): 48, pid=9, name=python, DBE (0x1) detected",
}

// fuzzIngest is a file's reader as the fuzz tests drive it: a node named
// by its file, a boot time for raw dmesg lines.
func fuzzIngest(f format) *fileIngest {
	src := &input.Source{Path: "gpu-0086.log"}
	fi := newFileIngest(nil, nil, nil, src, File{Path: src.Path}, Options{BootTime: t0})
	fi.format = f
	return fi
}

// checkFound holds what every record must be: on a valid node, a message
// of at most MaxMessage bytes of UTF-8, its Extra a JSON object.
func checkFound(t *testing.T, e *found) {
	t.Helper()
	if e == nil || e.err != nil {
		return
	}
	r := newRecord(e)
	if p := CheckNodeName(r.Object.Name); p != "" {
		t.Fatalf("node %q %s", r.Object.Name, p)
	}
	if len(r.Message) > MaxMessage || !utf8.ValidString(r.Message) {
		t.Fatalf("message of %d bytes, valid UTF-8 %v", len(r.Message), utf8.ValidString(r.Message))
	}
	if !json.Valid(r.Extra) || !gjson.ParseBytes(r.Extra).IsObject() {
		t.Fatalf("extra %s is no JSON object", r.Extra)
	}
	if r.Reason == "" || (r.Type != "Normal" && r.Type != "Warning") {
		t.Fatalf("reason %q type %q", r.Reason, r.Type)
	}
}

// FuzzClassify reads any text line as a node log does: no panic, no
// hang; a message that matches passes the gate; a record is well formed.
func FuzzClassify(f *testing.F) {
	for _, c := range classifyCases {
		f.Add(c.msg)
	}
	for _, l := range textLines {
		f.Add(l)
	}
	f.Add("2026-12-01T15:31:03Z " + strings.Repeat("NVRM: Xid (PCI:0000:3b:00): 79, ", 200))
	f.Fuzz(func(t *testing.T, line string) {
		if _, ok := Classify(line); ok && !mayMatch([]byte(line)) {
			t.Fatalf("%q matches but the gate refused it", line)
		}
		checkFound(t, fuzzIngest(formatText).text([]byte(line)))
	})
}

// FuzzJournal reads any journal line: no panic, no hang; the gate that
// reads the raw line never drops an entry whose message matches; a record
// is well formed, on a valid node.
func FuzzJournal(f *testing.F) {
	for _, c := range classifyCases {
		f.Add(journalLine(t0, "GPU-0087", "kernel", "kernel", "", c.msg))
	}
	f.Add(journalLine(t0, "gpu-0087", "kernel", "kernel", "", byteArray("nf_conntrack: table full, dropping packet \xff")))
	f.Add(journalLine(t0, "gpu_0087", "stdout", "kubelet", "kubelet.service", `"Eviction manager: pod is evicted successfully" pod="ml/train-0"`))
	f.Add(`{"MESSAGE":"\u0058id (PCI:0000:3b:00): 79, x","__REALTIME_TIMESTAMP":"1796139063878276"}`)
	f.Add(`{"MESSAGE" : "eth0: Link is Down", "__REALTIME_TIMESTAMP" : "1796139063878276", "_HOSTNAME" : "n1"}`)
	f.Add(`{"MESSAGE":null}`)
	f.Fuzz(func(t *testing.T, line string) {
		e, err := fuzzIngest(formatJournal).journal([]byte(line))
		if err != nil {
			return // the file's node: it is valid here
		}
		checkFound(t, e)
		if e == nil && gjson.Valid(line) && gjson.Parse(line).IsObject() {
			j := parseJournal([]byte(line))
			if msg, err := j.text(); err == nil {
				if _, ok := Classify(msg); ok {
					t.Fatalf("%q: its message matches, but the line was dropped", line)
				}
			}
		}
	})
}
