package evidence_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/ingest/evidence"
	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"

	"github.com/faultline/faultline/internal/testenv"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

const (
	auditLine = `{"kind":"Event","level":"Metadata","auditID":"a","stage":"ResponseComplete","verb":"get","user":{"username":"u"},"requestReceivedTimestamp":"2026-05-01T10:00:00Z"}` + "\n"
	pods      = `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-0","namespace":"ml","uid":"p0","resourceVersion":"3","creationTimestamp":"2026-05-01T10:00:00Z"},"spec":{"containers":[{"name":"t","image":"trainer:1"}]}}]}` + "\n"
	versLine  = `{"type":"run","job":"ml/train","run":"r-1","started":"2026-05-01T10:00:00Z","consumed":["dataset/imagenet@v42"],"pods":["ml/train-0"]}` + "\n"
	xidLine   = "2026-05-01T10:00:02,000000+00:00 NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python, GPU has fallen off the bus.\n"
	pleg      = `{"__REALTIME_TIMESTAMP":"1777629603000000","_HOSTNAME":"gpu-0087","SYSLOG_IDENTIFIER":"kubelet","MESSAGE":"\"Skipping pod synchronization\" err=\"PLEG is not healthy: pleg was last seen active 3m5s ago; threshold is 3m0s\""}` + "\n"
)

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// incident is a small recorded incident of every kind of evidence, with
// files that are none (README.md, expected.json).
func incident(t *testing.T) fstest.MapFS {
	return fstest.MapFS{
		"README.md":          {Data: []byte("# an incident\n")},
		"expected.json":      {Data: []byte("{}")},
		"audit.log":          {Data: []byte(auditLine)},
		"rotated/b.log.gz":   {Data: gz(t, strings.Replace(auditLine, `"auditID":"a"`, `"auditID":"b"`, 1)+"not json\n")},
		"objects/pods.json":  {Data: []byte(pods)},
		"objects/bad.yaml":   {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: ml, uid: p1, resourceVersion: \"1\"}\n---\n- a list\n")},
		"versions.jsonl":     {Data: []byte(versLine + "{\n")},
		"notes/versions.txt": {Data: []byte("not evidence")},
		// Node logs: named by their file, or by their folder; a .log here
		// is a node's, not an audit log.
		"nodelogs/README.md":            {Data: []byte("# generated node logs\n")},
		"nodelogs/gpu-0086.dmesg":       {Data: []byte(xidLine + "no time and no match\n[ 1.5] eth0: Link is Down\n")},
		"nodelogs/gpu-0087/journal.log": {Data: gz(t, pleg)},
		// Metrics: a query_range answer, gzipped as the zoo saves it.
		"metrics/README.md":       {Data: []byte("# CoreDNS's series\n")},
		"metrics/coredns.json.gz": {Data: gz(t, queryRange)},
	}
}

const queryRange = `{"status":"success","data":{"resultType":"matrix","result":[` +
	`{"metric":{"__name__":"coredns_dns_requests_total","type":"A"},"values":[[1764000000,"10"],[1764000015,"25"]]}]}}`

func TestEvidenceFind(t *testing.T) {
	got, err := evidence.Loader{}.Find(incident(t))
	if err != nil {
		t.Fatal(err)
	}
	want := &evidence.Files{
		Audits:   []string{"audit.log", "rotated/b.log.gz"},
		Objects:  []string{"objects/bad.yaml", "objects/pods.json"},
		Versions: []string{"versions.jsonl"},
		NodeLogs: []string{"nodelogs/gpu-0086.dmesg", "nodelogs/gpu-0087/journal.log"},
		Metrics:  []string{"metrics/coredns.json.gz"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if _, err := (evidence.Loader{}).Find(fstest.MapFS{"README.md": {Data: []byte("x")}}); !errors.Is(err, evidence.ErrNone) {
		t.Errorf("no evidence: got %v, want ErrNone", err)
	}
}

// TestEvidenceLoadFS: an fs.FS (the embedded fixtures) is ingested in place, each
// kind by its ingester, its runs named by the files' names in it, every
// skipped line or document heard of once.
func TestEvidenceLoadFS(t *testing.T) {
	var skipped []string
	l := evidence.Loader{OnSkip: func(s *input.Skip) { skipped = append(skipped, s.Error()) }}
	s := sqlitetest.New(t)
	runs, err := l.Load(context.Background(), s, incident(t))
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		Source        timeline.SourceKind
		Path          string
		Records, Bad  int64
		Versions      int64
		Status        timeline.RunStatus
		SHA256IsEmpty bool
	}
	var got []run
	for _, r := range runs {
		got = append(got, run{r.Source, r.Path, r.Records, r.BadLines, r.Versions, r.Status, r.SHA256 == ""})
	}
	want := []run{
		{timeline.SourceAudit, "audit.log", 1, 0, 0, timeline.RunDone, false},
		{timeline.SourceAudit, "rotated/b.log.gz", 1, 1, 0, timeline.RunDone, false},
		{timeline.SourceObject, "objects/bad.yaml", 0, 1, 1, timeline.RunDone, false},
		{timeline.SourceObject, "objects/pods.json", 0, 0, 1, timeline.RunDone, false},
		{timeline.SourceVersions, "versions.jsonl", 1, 1, 0, timeline.RunDone, false},
		{timeline.SourceNode, "nodelogs/gpu-0086.dmesg", 1, 1, 0, timeline.RunDone, false},
		{timeline.SourceNode, "nodelogs/gpu-0087/journal.log", 1, 0, 0, timeline.RunDone, false},
		{timeline.SourceMetrics, "metrics/coredns.json.gz", 2, 0, 0, timeline.RunDone, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs (-want +got)\n%s", diff)
	}
	if len(skipped) != 4 {
		t.Errorf("skipped: got %q, want one line of rotated/b.log.gz, one document of objects/bad.yaml, one line of versions.jsonl, one raw dmesg line of nodelogs/gpu-0086.dmesg", skipped)
	}
	var nodes []string
	for r, err := range s.Records(context.Background(), timeline.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Source == timeline.SourceNode {
			nodes = append(nodes, r.Object.Name+" "+r.Reason)
		}
	}
	if diff := cmp.Diff([]string{"gpu-0086 Xid", "gpu-0087 PLEG"}, nodes); diff != "" {
		t.Errorf("node records (-want +got)\n%s", diff)
	}
}

// TestEvidenceLoadDir: a folder on disk is read from disk, its runs recording the
// files' absolute paths, and a FIFO in it fails the load before anything
// is read (it would hang the replay).
func TestEvidenceLoadDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "audit.log"), []byte(auditLine), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "nodelogs", "gpu-0086"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nodelogs", "gpu-0086", "kern.log"), []byte(xidLine), 0o644); err != nil {
		t.Fatal(err)
	}
	s := sqlitetest.New(t)
	runs, err := evidence.Loader{Dir: dir}.Load(context.Background(), s, os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Path != filepath.Join(dir, "audit.log") || runs[0].Records != 1 ||
		runs[1].Path != filepath.Join(dir, "nodelogs", "gpu-0086", "kern.log") || runs[1].Records != 1 {
		t.Errorf("runs: got %+v, want one run of %s and one of nodelogs/gpu-0086/kern.log, with 1 record each", runs, filepath.Join(dir, "audit.log"))
	}
	for r, err := range s.Records(context.Background(), timeline.Query{}) {
		if err == nil && r.Source == timeline.SourceNode && r.Object.Name != "gpu-0086" {
			t.Errorf("a node log of nodelogs/gpu-0086/ is on node %q", r.Object.Name)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.log"), 0o644); err != nil {
		testenv.Missing(t, "no FIFO here: %v", err)
	}
	s = sqlitetest.New(t)
	if _, err := (evidence.Loader{Dir: dir}).Load(context.Background(), s, os.DirFS(dir)); err == nil {
		t.Fatal("a FIFO in the folder was read")
	}
	if got, err := s.Runs(context.Background()); err != nil || len(got) != 0 {
		t.Errorf("runs after a refused folder: %d, %v; want none", len(got), err)
	}
}
