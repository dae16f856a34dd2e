package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline/sqlite"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// TestKillAnywhereThenRerunEqualsClean kills a real faultline process with
// SIGKILL at random instants of an ingest of audit logs, object dumps and
// versions (seven each, 21 in all), reruns the whole ingest, and compares
// the timeline with a clean ingest of the same evidence: the records, the
// object versions and the request rollup must be the same.
func TestKillAnywhereThenRerunEqualsClean(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: 21 killed ingests")
	}
	faultline := processFaultline(t)
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.log")
	writeAuditLog(t, audit, 40_000)
	objects := filepath.Join(dir, "pods.json")
	writePodList(t, objects, 3_000)
	versions := filepath.Join(dir, "versions.jsonl")
	writeVersions(t, versions, 5_000)
	steps := [][]string{{"ingest", "audit", "--batch-size", "500", audit}, {"ingest", "objects", objects}, {"ingest", "versions", versions}}
	ctx := context.Background()
	ingestAll := func(db string) {
		t.Helper()
		for _, s := range steps {
			if out, err := faultline(ctx, append([]string{"--db", db}, s...)...).CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", s, err, out)
			}
		}
	}
	clean := filepath.Join(dir, "clean.db")
	took := make([]time.Duration, len(steps))
	for i, s := range steps {
		start := time.Now()
		if out, err := faultline(ctx, append([]string{"--db", clean}, s...)...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", s, err, out)
		}
		took[i] = time.Since(start)
	}
	want := fingerprint(t, clean)
	if want.Records < 40_000 || want.Versions < 3_000 || want.Requests < 40_000 {
		t.Fatalf("the clean ingest holds too little to compare: %+v", want)
	}
	rng := rand.New(rand.NewPCG(15, 21))
	for step := range steps {
		for k := range 7 {
			at := time.Duration(rng.Int64N(int64(took[step])))
			t.Run(fmt.Sprintf("%s/%d at %s", steps[step][1], k, at.Round(time.Millisecond)), func(t *testing.T) {
				db := filepath.Join(t.TempDir(), "t.db")
				for _, s := range steps[:step] {
					if out, err := faultline(ctx, append([]string{"--db", db}, s...)...).CombinedOutput(); err != nil {
						t.Fatalf("%v: %v\n%s", s, err, out)
					}
				}
				cmd := faultline(ctx, append([]string{"--db", db}, steps[step]...)...)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(at)
				cmd.Process.Kill()
				cmd.Wait()
				ingestAll(db)
				if got := fingerprint(t, db); got != want {
					t.Errorf("after a kill at %s and a rerun:\n got %+v\nwant %+v", at, got, want)
				}
			})
		}
	}
}

// fingerprint checks the timeline in db and returns what it holds,
// independent of row ids and run ids.
func fingerprint(t *testing.T, db string) sqlitetest.Print {
	t.Helper()
	s, err := sqlite.Open(context.Background(), db, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.IntegrityCheck(context.Background()); err != nil || v != "ok" {
		t.Fatalf("integrity_check = %q, %v", v, err)
	}
	p, err := sqlitetest.Fingerprint(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func writePodList(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprint(f, `{"apiVersion":"v1","kind":"List","items":[`)
	for i := range n {
		if i > 0 {
			fmt.Fprint(f, ",")
		}
		fmt.Fprintf(f, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-%d","namespace":"ns-%d","uid":"u-%d","resourceVersion":"%d","creationTimestamp":"2026-05-01T10:00:00Z"},"spec":{"nodeName":"node-%d","containers":[{"name":"main","image":"registry.example/app:%d"}]},"status":{"phase":"Running"}}`,
			i, i%50, i, 1000+i, i%100, i%7)
	}
	fmt.Fprint(f, "]}\n")
}

func writeVersions(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	for i := range n {
		fmt.Fprintf(f, `{"type":"artifact","time":"%s","kind":"dataset","name":"d-%d","version":"v%d","digest":"sha256:%064x"}`+"\n",
			t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i%40, i, i)
	}
}

// TestIngestOrderDoesNotMatter ingests the second half of a recorded audit
// log before the first and compares the timeline with the whole log
// ingested at once, with the object dump before or after: an object version
// seen twice keeps its best sighting (a write, then a read, then a dump's
// metadata; the earliest of a kind), whatever came first (issue 15, item 16).
func TestIngestOrderDoesNotMatter(t *testing.T) {
	lines := fixtureAuditLines(t, "bad-config-rollout")
	// The second half also reads again, ten minutes on, every object the
	// first half wrote: the same versions, seen later.
	half := len(lines) / 2
	rereads := rereadsLater(t, lines[:half], 10*time.Minute)
	if len(rereads) < 50 {
		t.Fatalf("only %d objects written in the first half", len(rereads))
	}
	lines = append(lines, rereads...)
	dir := t.TempDir()
	whole, first, second := filepath.Join(dir, "whole.log"), filepath.Join(dir, "first.log"), filepath.Join(dir, "second.log")
	for path, part := range map[string][][]byte{whole: lines, first: lines[:half], second: lines[half:]} {
		if err := os.WriteFile(path, bytes.Join(part, nil), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	objects := filepath.Join("..", "..", "fixtures", "bad-config-rollout", "objects")
	ingest := func(db string, files ...string) {
		t.Helper()
		for _, f := range files {
			kind := "audit"
			if f == objects {
				kind = "objects"
			}
			if out, err := faultline(ctx, "--db", db, "ingest", kind, f).CombinedOutput(); err != nil {
				t.Fatalf("ingest %s: %v\n%s", f, err, out)
			}
		}
	}
	// The dump holds versions the log wrote: what the log saw of them
	// (exact times) wins over what the dump's metadata says, before or after.
	inOrder, reversed := filepath.Join(dir, "in-order.db"), filepath.Join(dir, "reversed.db")
	ingest(inOrder, whole, objects)
	ingest(reversed, objects, second, first)
	want, got := fingerprint(t, inOrder), fingerprint(t, reversed)
	if want.Versions < 100 {
		t.Fatalf("the log holds too few versions to compare: %+v", want)
	}
	if got != want {
		t.Errorf("second half first:\n got %+v\nwant %+v", got, want)
	}
}

// fixtureAuditLines reads a bundled incident's audit log, one line (with
// its newline) an element.
func fixtureAuditLines(t *testing.T, incident string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "fixtures", incident, "audit.log.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(bytes.TrimSuffix(all, []byte("\n")), []byte("\n"))
}

// rereadsLater returns, for every object lines create or update, a get of
// it after later: the same version, seen again.
func rereadsLater(t *testing.T, lines [][]byte, later time.Duration) [][]byte {
	t.Helper()
	var rereads [][]byte
	for _, l := range lines {
		var ev map[string]any
		if json.Unmarshal(l, &ev) != nil {
			continue
		}
		obj, _ := ev["responseObject"].(map[string]any)
		md, _ := obj["metadata"].(map[string]any)
		if md["uid"] == nil || md["resourceVersion"] == nil || (ev["verb"] != "create" && ev["verb"] != "update") {
			continue
		}
		for _, k := range []string{"requestReceivedTimestamp", "stageTimestamp"} {
			if at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(ev[k])); err == nil {
				ev[k] = at.Add(later).Format(time.RFC3339Nano)
			}
		}
		ev["verb"], ev["auditID"], ev["level"] = "get", fmt.Sprint("reread-", ev["auditID"]), "RequestResponse"
		delete(ev, "requestObject")
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		rereads = append(rereads, append(b, '\n'))
	}
	return rereads
}
