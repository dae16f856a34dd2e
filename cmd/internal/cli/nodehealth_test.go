package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNodehealth: node logs of two nodes, counted by kind into the table
// and the JSON; a store without node logs says so and where they come from.
func TestNodehealth(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	a := writeFile(t, filepath.Join(dir, "gpu-0086.log"),
		"2026-12-01T15:31:03Z NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n"+
			"2026-12-01T15:32:00Z NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n")
	b := writeFile(t, filepath.Join(dir, "gpu-0087.log"),
		"2026-12-01T15:31:10Z eth0: Link is Down\n2026-12-01T15:31:11Z eth0: Link is Up\n")
	if code, _, stderr := runCLI(t, "--db", db, "ingest", "nodelogs", a, b); code != 0 {
		t.Fatalf("ingest: exit %d:\n%s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "--db", db, "nodehealth")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, want := range []string{"POOL", "Xid 79 x2, LinkDown x1", "gpu-0086", "Xid 79 x2", "gpu-0087", "LinkDown x1"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = runCLI(t, "--db", db, "nodehealth", "-o", "json")
	if code != 0 {
		t.Fatalf("json: exit %d:\n%s", code, stderr)
	}
	var rep struct{ Faults map[string]int }
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"Xid 79": 2, "LinkDown": 1}, rep.Faults); diff != "" {
		t.Errorf("faults (-want +got):\n%s", diff)
	}
	empty := filepath.Join(dir, "empty.db")
	writeFile(t, filepath.Join(dir, "gpu-0088.log"), "2026-12-01T15:31:10Z usb 1-1: new device\n")
	if code, _, stderr := runCLI(t, "--db", empty, "ingest", "nodelogs", filepath.Join(dir, "gpu-0088.log")); code != 0 {
		t.Fatalf("ingest: exit %d:\n%s", code, stderr)
	}
	if code, stdout, _ = runCLI(t, "--db", empty, "nodehealth"); code != 0 || !strings.Contains(stdout, "No node fault") {
		t.Errorf("exit %d, stdout:\n%s", code, stdout)
	}
}
