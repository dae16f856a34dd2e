package versions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

const good = `{"type":"artifact","time":"2026-05-01T09:00:00Z","kind":"dataset","name":"imagenet","version":"v42","digest":"sha256:abc","uri":"s3://data/imagenet/v42","producer":"etl/88","parents":["dataset/imagenet-raw@v7"]}
{"type":"run","job":"ml/train","run":"r-17","started":"2026-05-01T10:00:00Z","outcome":"failed","consumed":["dataset/imagenet@v42","model/resnet@3"],"produced":[],"pods":["ml/train-0-abc","uid:1234"]}
{"type":"rollout","time":"2026-05-01T09:30:00Z","target":"Deployment/web/api","from":"registry.example/api@sha256:aaa","to":"registry.example/api@sha256:bbb"}
`

func TestIngestMapsEachType(t *testing.T) {
	path := filepath.Join(t.TempDir(), "versions.jsonl")
	os.WriteFile(path, []byte(good), 0o644)
	s := sqlitetest.New(t)
	runs, err := Ingest(context.Background(), s, []string{path}, Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for r, err := range s.Records(context.Background(), timeline.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %s %s/%s %s %s line %d", r.Time.Format("15:04"), r.Verb, r.Object.Kind, r.Object.Namespace, r.Object.Name, r.Reason, r.Message, r.Evidence.Line))
	}
	want := []string{
		"09:00 publish dataset /imagenet  dataset/imagenet@v42 line 1",
		"09:30 rollout Deployment web/api  registry.example/api@sha256:aaa -> registry.example/api@sha256:bbb line 3",
		"10:00 run  ml/train failed r-17 line 2",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	again, err := Ingest(context.Background(), s, []string{path}, Options{})
	if err != nil || again[0].Records != 0 || again[0].Duplicates != 3 || runs[0].Records != 3 {
		t.Errorf("re-ingest: %+v, %v", again, err)
	}
}

func TestBadEntriesAreNamed(t *testing.T) {
	lines := []string{
		`{"type":"artifact","time":"2026-05-01T09:00:00Z","kind":"dataset","name":"imagenet","version":"v42"}`,
		`{"type":"artifact","time":"2026-05-01T09:00:00Z","kind":"weights","name":"x","version":"1"}`,
		`{"type":"artifact","time":"2026-05-01T09:00:00Z","kind":"model","name":"x"}`,
		`{"type":"run","job":"train","run":"r","started":"2026-05-01T10:00:00Z"}`,
		`{"type":"run","job":"ml/train","run":"r","started":"2026-05-01T10:00:00Z","consumed":["imagenet"]}`,
		`{"type":"run","job":"ml/train","run":"r","started":"2026-05-01T10:00:00Z","outcome":"exploded"}`,
		`{"type":"deploy","time":"2026-05-01T09:00:00Z"}`,
		`{"type":"rollout","time":"2026-05-01T09:00:00Z","target":"Deployment/web/api","to":"x","tagert":"typo"}`,
		`{"type":"artifact","time":"2026-05-01T09:00:00Z","kind":"dataset","name":"n","version":7}`,
		`{"type":"artifact","kind":"dataset"`,
		`{"type":"artifact","kind":"dataset","name":"n","version":"1"}`,
	}
	path := filepath.Join(t.TempDir(), "v.jsonl")
	os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
	var got []string
	runs, err := Ingest(context.Background(), sqlitetest.New(t), []string{path}, Options{OnSkip: func(b *input.Skip) {
		got = append(got, strings.TrimPrefix(b.Error(), filepath.Dir(path)+"/"))
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`v.jsonl:2: kind: "weights" is not one of dataset, model, checkpoint, config, image, code`,
		"v.jsonl:3: version: missing",
		`v.jsonl:4: job: "train": want NAMESPACE/NAME`,
		`v.jsonl:5: consumed[0]: "imagenet": want KIND/NAME@VERSION, e.g. dataset/imagenet@v42`,
		`v.jsonl:6: outcome: "exploded" is not one of running, succeeded, failed, unknown`,
		`v.jsonl:7: type: "deploy": want artifact, run or rollout`,
		"v.jsonl:8: tagert: unknown field",
		"v.jsonl:9: version: want string, got JSON number",
		"v.jsonl:10: json: truncated: unexpected end of input",
		"v.jsonl:11: time: missing",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if runs[0].Records != 1 || runs[0].BadLines != 10 {
		t.Errorf("run: %+v", runs[0])
	}
}

func TestYAML(t *testing.T) {
	doc := "- type: artifact\n  time: 2026-05-01T09:00:00Z\n  kind: model\n  name: llama\n  version: \"3\"\n---\ntype: run\njob: ml/ft\nrun: r1\nstarted: 2026-05-01T10:00:00Z\nconsumed: [model/llama@3]\n"
	path := filepath.Join(t.TempDir(), "v.yaml")
	os.WriteFile(path, []byte(doc), 0o644)
	runs, err := Ingest(context.Background(), sqlitetest.New(t), []string{path}, Options{Strict: true})
	if err != nil || runs[0].Records != 2 {
		t.Fatalf("runs %+v, err %v", runs, err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, l := range strings.Split(good, "\n") {
		f.Add([]byte(l))
	}
	f.Add([]byte(`{"type":"run","started":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decode(b)
		if err != nil {
			return
		}
		if e.validate() == nil {
			if _, err := e.record(); err != nil {
				t.Fatalf("valid entry without a record: %v", err)
			}
		}
	})
}
