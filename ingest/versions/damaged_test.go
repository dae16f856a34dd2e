package versions

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// TestDamagedGzipKeepsEveryDecodedEntry truncates a .gz of 5,000 entries,
// as JSON Lines and as YAML documents. Before, the read error discarded every
// entry read so far (0 of 5,000 kept); now each whole entry decoded before
// the fault is kept and the damage is one bad entry naming the file.
func TestDamagedGzipKeepsEveryDecodedEntry(t *testing.T) {
	const n = 5000
	var jsonl, yml strings.Builder
	for i := range n {
		fmt.Fprintf(&jsonl, `{"type":"artifact","time":"2026-05-01T09:00:00Z","kind":"dataset","name":"d%d","version":"v1"}`+"\n", i)
		fmt.Fprintf(&yml, "---\ntype: artifact\ntime: 2026-05-01T09:00:00Z\nkind: dataset\nname: d%d\nversion: v1\n", i)
	}
	for _, tc := range []struct {
		name, file, text string
		perEntry         int // lines per entry
	}{
		{"json lines", "versions.jsonl.gz", jsonl.String(), 1},
		{"yaml documents", "versions.yaml.gz", yml.String(), 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write([]byte(tc.text))
			zw.Close()
			cut := b.Bytes()[:b.Len()*9/10]
			zr, _ := gzip.NewReader(bytes.NewReader(cut))
			var dec bytes.Buffer
			dec.ReadFrom(zr)
			whole := int64(bytes.Count(dec.Bytes(), []byte("\n")) / tc.perEntry)
			path := filepath.Join(t.TempDir(), tc.file)
			os.WriteFile(path, cut, 0o644)
			var bad []string
			runs, err := Ingest(context.Background(), sqlitetest.New(t), []string{path}, Options{OnSkip: func(b *input.Skip) { bad = append(bad, b.Error()) }})
			if err != nil {
				t.Fatal(err)
			}
			// A YAML document cut in its middle may still parse and fail
			// validation: it is then one more bad entry, never a lost one.
			if r := runs[0]; r.Records < whole-1 || r.Records > whole || r.Records+r.BadLines != r.Lines || r.Records < n/2 {
				t.Errorf("run %+v: want about %d of %d records", r, whole, n)
			}
			if len(bad) == 0 || !strings.Contains(bad[len(bad)-1], "file: gzip: unexpected EOF") {
				t.Errorf("bad entries %q: want the damage last", bad)
			}
		})
	}
}

// TestYAMLAliasBombIsOneBadEntry: a 2 MB scalar aliased 600 times expanded
// to 1.2 GB and crashed the ingest. Now that document is one bad entry
// naming the expansion, and the documents around it are kept.
func TestYAMLAliasBombIsOneBadEntry(t *testing.T) {
	entry := "type: artifact\ntime: 2026-05-01T09:00:00Z\nkind: dataset\nname: %s\nversion: v1\n"
	bomb := "big: &big " + strings.Repeat("x", 2<<20) + "\ncopies: [" + strings.Repeat("*big, ", 599) + "*big]\n"
	doc := fmt.Sprintf(entry, "before") + "---\n" + bomb + "---\n" + fmt.Sprintf(entry, "after")
	path := filepath.Join(t.TempDir(), "versions.yaml")
	os.WriteFile(path, []byte(doc), 0o644)
	var bad []string
	runs, err := Ingest(context.Background(), sqlitetest.New(t), []string{path}, Options{OnSkip: func(b *input.Skip) { bad = append(bad, b.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	if runs[0].Records != 2 || len(bad) != 1 || !strings.Contains(bad[0], "versions.yaml:2: yaml: aliases expand to over") {
		t.Errorf("run %+v, bad %q: want 2 records and the bomb named", runs[0], bad)
	}
}
