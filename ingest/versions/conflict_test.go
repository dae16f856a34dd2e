package versions

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
	"github.com/google/go-cmp/cmp"
)

// TestAnotherDigestIsAConflict: the same artifact version published with
// another digest used to count as a duplicate and vanish. It is another
// claim, kept and counted as a conflict; the same line again is still a
// duplicate, and a re-ingest adds nothing (issue 15, item 17).
func TestAnotherDigestIsAConflict(t *testing.T) {
	const (
		a = `{"type":"artifact","time":"2026-05-01T09:00:00Z","kind":"dataset","name":"imagenet","version":"v42","digest":"sha256:aaaa"}` + "\n"
		b = `{"type":"artifact","time":"2026-05-01T09:00:00Z","kind":"dataset","name":"imagenet","version":"v42","digest":"sha256:bbbb"}` + "\n"
		c = `{"type":"artifact","time":"2026-05-01T09:00:00Z","kind":"dataset","name":"imagenet","version":"v42","digest":"sha256:cccc"}` + "\n"
	)
	type counts struct{ Records, Duplicates, Conflicts int64 }
	for _, tc := range []struct {
		name  string
		lines string
		want  counts
	}{
		{"the same line twice", a + a, counts{1, 1, 0}},
		{"another digest", a + b, counts{2, 0, 1}},
		{"two other digests, each twice", a + b + c + b + c, counts{3, 2, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "versions.jsonl")
			if err := os.WriteFile(path, []byte(tc.lines), 0o644); err != nil {
				t.Fatal(err)
			}
			s := sqlitetest.New(t)
			runs, err := Ingest(context.Background(), s, []string{path}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := runs[0]
			if diff := cmp.Diff(tc.want, counts{r.Records, r.Duplicates, r.Conflicts}); diff != "" {
				t.Errorf("first ingest (-want +got):\n%s", diff)
			}
			again, err := Ingest(context.Background(), s, []string{path}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			r = again[0]
			if r.Records != 0 || r.Duplicates != int64(len(tc.lines)/len(a)) {
				t.Errorf("re-ingest added %d records, %d duplicates: want none added", r.Records, r.Duplicates)
			}
		})
	}
}
