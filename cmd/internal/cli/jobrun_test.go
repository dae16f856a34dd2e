package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJobRunInIdentity: a job run ingested from the ML platform's versions
// file joins the identity of the pod it names, in a real timeline file:
// ingest versions writes the run as the identity resolver reads it.
func TestJobRunInIdentity(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	pods := filepath.Join(dir, "pods.json")
	runs := filepath.Join(dir, "runs.jsonl")
	writeFile(t, pods, `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"trainer-0",
		"namespace":"ml","uid":"u-1","resourceVersion":"5","creationTimestamp":"2026-05-01T09:59:00Z"},
		"spec":{"nodeName":"node-1","containers":[{"name":"c","image":"train:v1"}]}}]}`)
	writeFile(t, runs, `{"type":"run","job":"ml/train","run":"r-17","started":"2026-05-01T10:00:00Z",`+
		`"consumed":["dataset/imagenet@v42"],"pods":["ml/trainer-0"]}`+"\n")
	runOK(t, dir, "--db", db, "ingest", "objects", pods)
	runOK(t, dir, "--db", db, "ingest", "versions", runs)
	var id struct {
		Dimensions []struct{ Name, Value string }
	}
	if err := json.Unmarshal([]byte(runOK(t, dir, "--db", db, "identity", "pod/ml/trainer-0", "-o", "json")), &id); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range id.Dimensions {
		got[d.Name] = d.Value
	}
	want := map[string]string{"run": "ml/train r-17", "artifact.consumed/dataset/imagenet": "v42"}
	for k := range got {
		if _, ok := want[k]; !ok {
			delete(got, k)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the run's dimensions of pod ml/trainer-0 (-want +got):\n%s", diff)
	}
}
