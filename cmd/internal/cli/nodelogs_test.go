package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeFile writes text to path, making its folder, and returns path.
func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestIngestNodeLogs: a folder of one node's dmesg and another node's
// journal; the records land on their nodes, the run summaries print as for
// every ingest, and a second ingest adds nothing.
func TestIngestNodeLogs(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	writeFile(t, filepath.Join(dir, "logs", "gpu-0086", "dmesg.txt"),
		"[ 3600.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n"+
			"[ 3600.100000] usb 1-1: new high-speed USB device number 2 using xhci_hcd\n")
	journal := writeFile(t, filepath.Join(dir, "gpu-0087.journal.json"),
		`{"__REALTIME_TIMESTAMP":"1796139065000000","_HOSTNAME":"gpu-0087","_TRANSPORT":"stdout","SYSLOG_IDENTIFIER":"kubelet","MESSAGE":"E1201 15:31:05.000000 1234 kubelet.go:2697] \"Skipping pod synchronization\" err=\"PLEG is not healthy: pleg was last seen active 3m5s ago; threshold is 3m0s\""}`+"\n")
	args := []string{"--db", db, "ingest", "nodelogs", "--boot-time", "2026-12-01T14:31:03Z", filepath.Join(dir, "logs"), journal}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"done " + filepath.Join(dir, "logs", "gpu-0086", "dmesg.txt") + ": 1 records, 0 duplicates skipped, 0 bad lines",
		"done " + journal + ": 1 records"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	code, stdout, stderr = runCLI(t, "--db", db, "timeline", "-o", "jsonl")
	if code != 0 {
		t.Fatalf("timeline: exit %d: %s", code, stderr)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var r struct {
			Time   string
			Source string
			Reason string
			Code   int
			Object struct{ Kind, Name string }
			Extra  struct{ Component, Origin string }
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		got = append(got, strings.Join([]string{r.Time, r.Source, r.Object.Kind, r.Object.Name, r.Reason, r.Extra.Component, r.Extra.Origin}, " "))
	}
	want := []string{
		"2026-12-01T15:31:03Z node Node gpu-0086 Xid kernel hardware",
		"2026-12-01T15:31:05Z node Node gpu-0087 PLEG kubelet ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got)\n%s", diff)
	}
	if code, _, stderr = runCLI(t, args...); code != 0 || !strings.Contains(stderr, "0 records, 1 duplicates skipped") {
		t.Errorf("re-ingest: exit %d, stderr:\n%s", code, stderr)
	}
}

func TestIngestNodeLogsTellsWhatToDo(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	raw := writeFile(t, filepath.Join(dir, "gpu-0086.dmesg"), "[ 12.500000] eth0: Link is Down\n")
	kern := writeFile(t, filepath.Join(dir, "kern.log"), "2026-12-01T15:31:03Z eth0: Link is Down\n")
	tests := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--node", "GPU_0086", raw}, exitUsage, []string{`invalid --node "GPU_0086"`, "Try: faultline ingest nodelogs --node gpu-0086"}},
		{[]string{"--boot-time", "yesterday", raw}, exitUsage, []string{`invalid --boot-time "yesterday": want RFC 3339`, "uptime -s"}},
		{[]string{kern}, exitUsage, []string{`kern.log: node name "kern" (from its file name) names a log, not a node`, "Try: faultline ingest nodelogs --node gpu-0086 FILE"}},
		{[]string{raw}, exitOK, []string{"gpu-0086.dmesg:1: time: [12.500000] counts seconds since the node booted", "(pass --boot-time)", "1 raw dmesg line(s) were not placed"}},
		{[]string{"--strict", raw}, exitFailure, []string{"stopped at the first bad line (--strict)"}},
		{[]string{"--help"}, exitOK, nil},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"--db", db, "ingest", "nodelogs"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if tc.args[0] == "--help" && !strings.Contains(stdout, "Examples:") {
				t.Errorf("help has no examples:\n%s", stdout)
			}
		})
	}
}
