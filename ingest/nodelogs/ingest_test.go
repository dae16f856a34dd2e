package nodelogs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// t0 is 2026-12-01T15:31:03.878276Z, where the samples start.
var t0 = time.Date(2026, 12, 1, 15, 31, 3, 878276000, time.UTC)

// journalLine is an entry of journalctl -o json, as systemd writes one.
func journalLine(at time.Time, host, transport, ident, unit, message string) string {
	msg := fmt.Sprintf("%q", message)
	if strings.HasPrefix(message, "[") {
		msg = message // an array of byte values
	}
	return fmt.Sprintf(`{"__CURSOR":"s=9f1c;i=%x;b=4d2e;m=1a2b;t=%x;x=77","__REALTIME_TIMESTAMP":"%d","__MONOTONIC_TIMESTAMP":"1234567890","_BOOT_ID":"4d2e7c1b9a0f4e8d8c7b6a5f4e3d2c1b","_MACHINE_ID":"0a1b2c3d4e5f60718293a4b5c6d7e8f9","_HOSTNAME":%q,"PRIORITY":"4","_TRANSPORT":%q,"SYSLOG_IDENTIFIER":%q,"_SYSTEMD_UNIT":%q,"MESSAGE":%s}`,
		at.UnixMicro(), at.UnixMicro(), at.UnixMicro(), host, transport, ident, unit, msg)
}

func write(t *testing.T, path string, lines ...string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// summary is one record as the tests compare it.
func summary(t *testing.T, s timeline.Reader) []string {
	t.Helper()
	var out []string
	for r, err := range s.Records(context.Background(), timeline.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		msg, _, _ := strings.Cut(r.Message, ",")
		out = append(out, fmt.Sprintf("%s %s %s/%s %d %s %s %q line %d", r.Time.Format("15:04:05.000000"), r.Object.Name,
			r.Source, r.Reason, r.Code, r.Type, r.Extra, msg, r.Evidence.Line))
	}
	return out
}

// TestNodeLogIngestEachFormat: journald JSON, dmesg (iso, -T, raw with a boot
// time) and kubectl logs --timestamps, each file named to its node its own
// way; lines that match nothing are counted and dropped; re-ingesting adds
// nothing.
func TestNodeLogIngestEachFormat(t *testing.T) {
	dir := t.TempDir()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	boot := t0.Add(-time.Hour)
	files := []File{
		{Path: write(t, filepath.Join(dir, "gpu-0086.dmesg"),
			"2026-12-01T15:31:03,878276+00:00 usb 1-1: new high-speed USB device number 2 using xhci_hcd",
			"2026-12-01T15:31:03,878276+00:00 NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
			"",
			"2026-12-01T15:31:04,000001+00:00 mlx5_core 0000:5e:00.0 ens2f0np0: Link down",
			"2026-12-01T15:31:09,5+00:00 mlx5_core 0000:5e:00.0 ens2f0np0: Link up")},
		{Path: write(t, filepath.Join(dir, "gpu-0087.journal.json"),
			journalLine(at(time.Second), "GPU-0087", "stdout", "kubelet", "kubelet.service", `I1201 15:31:04.878276 1234 kubelet.go:2500] "SyncLoop (probe)" probe="readiness" status="ready" pod="ml/train-1"`),
			journalLine(at(2*time.Second), "GPU-0087", "stdout", "kubelet", "kubelet.service", `E1201 15:31:05.878276 1234 kubelet.go:2697] "Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m5.3s ago; threshold is 3m0s"`),
			journalLine(at(3*time.Second), "GPU-0087", "kernel", "kernel", "", byteArray("nf_conntrack: table full, dropping packet \xff")))},
		{Path: write(t, filepath.Join(dir, "logs", "gpu-0088", "train-0.log"),
			"2026-12-01T15:31:20.000000001Z gpu-0088:4242:4300 [0] NCCL INFO Channel 00/32 : 0 1 2 3",
			"2026-12-01T15:31:21.5Z [rank3]:[E1201 15:31:21.500000 4242 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600046 milliseconds before timing out."),
			Root: filepath.Join(dir, "logs")},
		{Path: write(t, filepath.Join(dir, "gpu-0089.dmesg-T"),
			"[Tue Dec  1 15:31:30 2026] Out of memory: Killed process 777 (python) total-vm:1kB, anon-rss:1kB"),
		},
		{Path: write(t, filepath.Join(dir, "raw", "kern.txt"),
			"[ 3600.000001] bond0: (slave eth1): link status definitely down, disabling slave",
			"<4>[ 3601.250000] EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0)")},
	}
	s := sqlitetest.New(t)
	ctx := context.Background()
	runs, err := Ingest(ctx, s, files[:4], Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Ingest(ctx, s, files[4:], Options{Strict: true, Node: "gpu-0090", BootTime: boot}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`15:31:03.878276 gpu-0086 node/Xid 79 Warning {"action":"drain the node, then reset or reseat the GPU (usually a reboot); check PCIe, power and cooling; RMA if it recurs","component":"kernel","meaning":"GPU has fallen off the bus","origin":"hardware","pci":"0000:3b:00","pid":1234,"process":"python3"} "NVRM: Xid (PCI:0000:3b:00): 79" line 2`,
		`15:31:04.000001 gpu-0086 node/LinkDown 0 Warning {"component":"kernel","iface":"ens2f0np0","pci":"0000:5e:00.0"} "mlx5_core 0000:5e:00.0 ens2f0np0: Link down" line 4`,
		`15:31:05.878276 gpu-0087 node/PLEG 0 Warning {"component":"kubelet"} "E1201 15:31:05.878276 1234 kubelet.go:2697] \"Skipping pod synchronization\" err=\"PLEG is not healthy: pleg was last seen active 3m5.3s ago; threshold is 3m0s\"" line 2`,
		`15:31:06.878276 gpu-0087 node/ConntrackFull 0 Warning {"component":"kernel"} "nf_conntrack: table full" line 3`,
		`15:31:09.500000 gpu-0086 node/LinkUp 0 Normal {"component":"kernel","iface":"ens2f0np0","pci":"0000:5e:00.0"} "mlx5_core 0000:5e:00.0 ens2f0np0: Link up" line 5`,
		`15:31:21.500000 gpu-0088 node/NCCLTimeout 0 Warning {"component":"nccl","rank":3} "[rank3]:[E1201 15:31:21.500000 4242 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7" line 2`,
		`15:31:30.000000 gpu-0089 node/OOMKill 0 Warning {"component":"kernel","pid":777,"process":"python"} "Out of memory: Killed process 777 (python) total-vm:1kB" line 1`,
		`15:31:03.878277 gpu-0090 node/LinkDown 0 Warning {"component":"kernel","iface":"eth1"} "bond0: (slave eth1): link status definitely down" line 1`,
		`15:31:05.128276 gpu-0090 node/ECC 0 Normal {"component":"kernel"} "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0)" line 2`,
	}
	got := summary(t, s)
	// Ordered by time: the raw dmesg lines land an hour after boot.
	wantByTime := []string{want[0], want[7], want[1], want[8], want[2], want[3], want[4], want[5], want[6]}
	if diff := cmp.Diff(wantByTime, got); diff != "" {
		t.Errorf("records (-want +got)\n%s", diff)
	}
	var lines, records int64
	for _, r := range runs {
		lines, records = lines+r.Lines, records+r.Records
	}
	if lines != 10 || records != 7 {
		t.Errorf("runs read %d lines into %d records, want 10 into 7: %+v", lines, records, runs)
	}
	again, err := Ingest(ctx, s, files[:4], Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range again {
		if r.Records != 0 || r.BadLines != 0 || r.Status != timeline.RunDone {
			t.Errorf("re-ingest of %s: %+v, want nothing added", r.Path, r)
		}
	}
	if n := len(summary(t, s)); n != len(want) {
		t.Errorf("re-ingest: %d records, want %d", n, len(want))
	}
}

// byteArray is journald's JSON for a message that is not UTF-8.
func byteArray(s string) string {
	parts := make([]string, len(s))
	for i := range len(s) {
		parts[i] = fmt.Sprint(s[i])
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestNodeLogBadLinesAreNamed: a line that matches a pattern but cannot be
// placed in time or on a node is FILE:LINE: field: problem; one that
// matches nothing is no bad line, whatever its shape.
func TestNodeLogBadLinesAreNamed(t *testing.T) {
	dir := t.TempDir()
	xid := "NVRM: Xid (PCI:0000:3b:00): 48, pid=9, name=python, DBE (0x1) detected"
	text := write(t, filepath.Join(dir, "gpu-0086.dmesg"),
		"a line with no time that matches nothing",
		xid,
		"[ 12.500000] "+xid,
		"2026-13-01T15:31:03,878276+00:00 "+xid,
		"[Tue Dec 41 15:31:03 2026] "+xid,
		"2026-12-01T15:31:03,878276+00:00 "+xid)
	journal := write(t, filepath.Join(dir, "gpu-0087.json"),
		journalLine(t0, "gpu-0087", "kernel", "kernel", "", xid),
		strings.Replace(journalLine(t0, "gpu-0087", "kernel", "kernel", "", xid), `"__REALTIME_TIMESTAMP":"`, `"X":"`, 1),
		strings.Replace(journalLine(t0, "gpu-0087", "kernel", "kernel", "", xid), `"__REALTIME_TIMESTAMP":"`, `"__REALTIME_TIMESTAMP":"soon`, 1),
		journalLine(t0, "gpu_0087", "kernel", "kernel", "", xid),
		`{"MESSAGE":"`+xid+`", "__REALTIME_TIMESTAMP":`,
		`{"MESSAGE":{"text":"`+xid+`"},"__REALTIME_TIMESTAMP":"1"}`,
		`{"MESSAGE":[78,86,82,77,58,32,88,105,100,32,300]}`,
		`{"MESSAGE":"no keyword", "__REALTIME_TIMESTAMP":`)
	var got []string
	var noBoot int
	runs, err := Ingest(context.Background(), sqlitetest.New(t), []File{{Path: text}, {Path: journal}}, Options{OnSkip: func(b *input.Skip) {
		got = append(got, strings.TrimPrefix(b.Error(), dir+"/"))
		if errors.Is(b, ErrNoBootTime) {
			noBoot++
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"gpu-0086.dmesg:2: time: no timestamp at the start of the line: want RFC 3339 (2026-12-01T15:31:03.878276Z), dmesg --time-format=iso, dmesg -T or dmesg's [seconds since boot]",
		"gpu-0086.dmesg:3: time: [12.500000] counts seconds since the node booted: the node's boot time is needed to place it",
		`gpu-0086.dmesg:4: time: parsing time "2026-13-01T15:31:03.878276+00:00": month out of range`,
		"gpu-0086.dmesg:5: time: [Tue Dec 41 15:31:03 2026]: want dmesg -T's [Tue Dec  1 15:31:03 2026] or dmesg's [seconds since boot]",
		"gpu-0087.json:2: __REALTIME_TIMESTAMP: missing",
		`gpu-0087.json:3: __REALTIME_TIMESTAMP: "soon1796139063878276": want microseconds since the epoch`,
		`gpu-0087.json:4: _HOSTNAME: "gpu_0087" is not a valid Kubernetes node name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		"gpu-0087.json:5: json: not a JSON object: want journalctl -o json, one entry a line",
		"gpu-0087.json:6: MESSAGE: want a string or an array of byte values, got an object",
		"gpu-0087.json:7: MESSAGE: want a string or an array of byte values (0 to 255)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if noBoot != 1 {
		t.Errorf("%d bad lines are ErrNoBootTime, want 1", noBoot)
	}
	if r := runs[0]; r.Records != 1 || r.BadLines != 4 || r.Lines != 6 {
		t.Errorf("text run: %+v", r)
	}
	if r := runs[1]; r.Records != 1 || r.BadLines != 6 || r.Lines != 8 {
		t.Errorf("journal run: %+v", r)
	}
}

func TestNodeLogStrictStopsAtTheFirstBadLine(t *testing.T) {
	path := write(t, filepath.Join(t.TempDir(), "gpu-0086.dmesg"),
		"2026-12-01T15:31:03Z eth0: Link is Down",
		"[ 12.5] eth0: Link is Up",
		"2026-12-01T15:31:05Z eth0: Link is Up")
	runs, err := Ingest(context.Background(), sqlitetest.New(t), []File{{Path: path}}, Options{Strict: true})
	if !errors.Is(err, ErrStrict) || !errors.Is(err, ErrNoBootTime) || !strings.Contains(err.Error(), "gpu-0086.dmesg:2: time:") {
		t.Fatalf("err = %v, want the strict stop at line 2", err)
	}
	if r := runs[0]; r.Records != 1 || r.Status != timeline.RunFailed {
		t.Errorf("run %+v: want the first line kept, failed", r)
	}
}

// TestNodeLogNodeNames: a file's node comes from the option, then (journald)
// _HOSTNAME, then its folder below the one walked, then its name; a name
// that is no node's is an error naming the file.
func TestNodeLogNodeNames(t *testing.T) {
	tests := []struct {
		path, root, node string
		want, from       string
		bad              string // the error, if any
	}{
		{"/x/gpu-0086.dmesg", "", "", "gpu-0086", fromFileName, ""},
		{"/x/gpu-0086.journal.json.gz", "", "", "gpu-0086", fromFileName, ""},
		{"/logs/gpu-0086/kern.log", "/logs", "", "gpu-0086", fromFolder, ""},
		{"/logs/gpu-0086/2026/kern.log", "/logs", "", "gpu-0086", fromFolder, ""},
		{"/logs/gpu-0086.dmesg", "/logs", "", "gpu-0086", fromFileName, ""},
		{"/var/log/kern.log", "", "", "kern", fromFileName, `names a log, not a node`},
		{"/x/GPU_0086.txt", "", "", "GPU_0086", fromFileName, `is not a valid Kubernetes node name`},
		{"/var/log/kern.log", "", "gpu-0001", "gpu-0001", fromOption, ""},
		{"-", "", "", "-", fromFileName, `is not a valid Kubernetes node name`},
	}
	for _, tc := range tests {
		node, from := fileNode(Options{Node: tc.node}, tc.path, tc.root, false)
		err := checkFileNode(tc.path, node, from)
		if node != tc.want || from != tc.from || (err == nil) != (tc.bad == "") || (err != nil && !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%s below %q: node %q from %s, err %v; want %q from %s, error %q", tc.path, tc.root, node, from, err, tc.want, tc.from, tc.bad)
		}
	}
	dir := t.TempDir()
	kern := write(t, filepath.Join(dir, "kern.log"), "2026-12-01T15:31:03Z eth0: Link is Down")
	journal := write(t, filepath.Join(dir, "journal.json"), `{"MESSAGE":"eth0: Link is Down","__REALTIME_TIMESTAMP":"1796139063878276"}`)
	for _, f := range []string{kern, journal} {
		_, err := Ingest(context.Background(), sqlitetest.New(t), []File{{Path: f}}, Options{})
		var ne *NodeNameError
		if !errors.As(err, &ne) || ne.Path != f {
			t.Errorf("%s: err %v, want a *NodeNameError naming the file", f, err)
		}
	}
	if _, err := Ingest(context.Background(), sqlitetest.New(t), nil, Options{Node: "Not_A_Node"}); err == nil {
		t.Error("an invalid Options.Node was accepted")
	}
}

func TestNodeLogExpandWalksFoldersAndRefusesBinaryJournals(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "gpu-0086", "dmesg.txt"), "x")
	write(t, filepath.Join(dir, "gpu-0086", "system.journal"), "x")
	write(t, filepath.Join(dir, ".hidden"), "x")
	one := write(t, filepath.Join(t.TempDir(), "gpu-0087.dmesg"), "x")
	files, skipped, err := Expand([]string{dir, one})
	if err != nil {
		t.Fatal(err)
	}
	want := []File{{filepath.Join(dir, "gpu-0086", "dmesg.txt"), dir}, {one, ""}}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("files (-want +got)\n%s", diff)
	}
	if len(skipped) != 1 || !strings.HasSuffix(skipped[0].Path, "system.journal") {
		t.Errorf("skipped %+v, want the binary journal", skipped)
	}
}
