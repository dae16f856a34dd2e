package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/faultline/faultline/cmd/internal/cli"
	"github.com/faultline/faultline/internal/testenv"
	"github.com/faultline/faultline/timeline/sqlite"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// The test binary doubles as faultline: for testscript's "exec faultline"
// and, with FAULTLINE_AS_MAIN=1, for tests that must kill a real process.
func TestMain(m *testing.M) {
	if os.Getenv("FAULTLINE_AS_MAIN") == "1" {
		main()
		return
	}
	testscript.Main(ownConfigM{m}, map[string]func(){
		"faultline": func() { os.Exit(cli.Run(context.Background(), os.Args[1:], cli.System())) },
		// kubectl runs it as a plugin under this name (README.md).
		"kubectl-faultline": func() { os.Exit(cli.Run(context.Background(), os.Args[1:], cli.System())) },
	})
}

// ownConfigM runs the tests with XDG_CONFIG_HOME in a folder of their own,
// removed afterwards: no test, nor any faultline it runs, reads or makes the
// real home's key. (testscript.Main calls Run only for the tests, not when
// the binary runs as faultline.)
type ownConfigM struct{ m *testing.M }

func (o ownConfigM) Run() int {
	cfg, err := os.MkdirTemp("", "faultline-config-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(cfg)
	os.Setenv("XDG_CONFIG_HOME", cfg)
	os.Unsetenv("FAULTLINE_KEY")
	return o.m.Run()
}

func TestScripts(t *testing.T) {
	samples, err := filepath.Abs("../../../shared/data/audit-samples")
	if err != nil {
		t.Fatal(err)
	}
	// Second recordings of each incident, other seeds, never used while
	// tuning: replayed as folders of one's own.
	holdout, err := filepath.Abs("../../fixtures/holdout")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(samples); err != nil && os.Getenv("CI") != "" {
		t.Fatalf("shared samples missing in CI: %v", err)
	}
	// The incident zoo (fixtures/zoo): CI scores a sample of it, one
	// incident per family (zoo-sample.txtar).
	zoo, err := filepath.Abs("../../fixtures/zoo")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("SAMPLES", samples)
			env.Setenv("HOLDOUT", holdout)
			env.Setenv("ZOO", zoo)
			env.Setenv("NO_COLOR", "1")
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "samples" {
				_, err := os.Stat(samples)
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// writeAuditLog writes n distinct, valid audit lines.
func writeAuditLog(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Millisecond).Format("2006-01-02T15:04:05.000000Z")
		fmt.Fprintf(w, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"id-%08d","stage":"ResponseComplete",`+
			`"requestURI":"/api/v1/namespaces/ns-%d/pods/p-%d","verb":"get","user":{"username":"system:node:node-%04d","groups":["system:nodes"]},`+
			`"sourceIPs":["10.0.%d.%d"],"userAgent":"kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef0","objectRef":{"resource":"pods","namespace":"ns-%d","name":"p-%d","apiVersion":"v1"},`+
			`"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"%s","stageTimestamp":"%s","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}`+"\n",
			i, i%50, i%5000, i%1000, (i/256)%256, i%256, i%50, i%5000, at, at)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func faultline(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), "FAULTLINE_AS_MAIN=1")
	return cmd
}

// processFaultline gives the faultline a test runs as a process many
// times over, to kill it: this test binary as faultline, or under -race a
// faultline built without it (testenv.PlainFaultline), which inherits the
// test's environment as this binary does.
func processFaultline(t *testing.T) func(ctx context.Context, args ...string) *exec.Cmd {
	t.Helper()
	if !testenv.RaceEnabled {
		return faultline
	}
	bin := testenv.PlainFaultline(t)
	return func(ctx context.Context, args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, bin, args...)
	}
}

// count counts the records of the timeline in db.
func count(t *testing.T, db string) sqlitetest.Counts {
	t.Helper()
	c, err := sqlitetest.Count(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestKill9MidIngest kills a real faultline process with SIGKILL in the
// middle of an ingest, at several points, and checks that the database
// passes integrity_check and that a rerun completes the ingest with no
// duplicates and nothing lost.
func TestKill9MidIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: ingests 200k lines several times")
	}
	faultline := processFaultline(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	const n = 200_000
	writeAuditLog(t, log, n)
	for _, killAt := range []int64{1, 40_000, 120_000} {
		t.Run(fmt.Sprintf("after %d records", killAt), func(t *testing.T) {
			ctx := context.Background()
			db := filepath.Join(t.TempDir(), "t.db")
			// The log comes through a pipe that is fed only part of it and
			// held open, so the ingest cannot finish before the kill: the
			// kill point is guaranteed, however fast the machine.
			cmd := faultline(ctx, "--db", db, "ingest", "audit", "--batch-size", "1000", "-")
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			fed := killAt + 20_000
			go feedLines(log, fed, in) // ends with an error once the process is killed
			deadline := time.Now().Add(2 * time.Minute)
			for {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("ingest never reached the kill point")
				}
				if _, err := os.Stat(db); err == nil {
					if c, err := committed(db); err == nil && c >= killAt {
						break
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			in.Close()

			s, err := sqlite.Open(ctx, db, sqlite.Options{})
			if err != nil {
				t.Fatalf("reopen after kill -9: %v", err)
			}
			if v, err := s.IntegrityCheck(ctx); err != nil || v != "ok" {
				t.Fatalf("integrity_check after kill -9 = %q, %v", v, err)
			}
			s.Close()
			kept := count(t, db).Records
			if kept < killAt || kept > fed {
				t.Fatalf("the kill left %d records, want %d to %d", kept, killAt, fed)
			}

			out, err := faultline(ctx, "--db", db, "ingest", "audit", log).CombinedOutput()
			if err != nil {
				t.Fatalf("rerun: %v\n%s", err, out)
			}
			if got := count(t, db).Records; got != n {
				t.Errorf("after rerun: %d records, want %d", got, n)
			}
			if got := count(t, db).AuditIDs; got != n {
				t.Errorf("after rerun: %d distinct audit IDs, want %d", got, n)
			}
			want := fmt.Sprintf("%s duplicates skipped", humanInt(kept))
			if !strings.Contains(string(out), want) {
				t.Errorf("rerun summary should say %q:\n%s", want, out)
			}
		})
	}
}

// feedLines writes the first n lines of the file at path to w.
func feedLines(path string, n int64, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for i := int64(0); i < n && sc.Scan(); i++ {
		if _, err := w.Write(append(sc.Bytes(), '\n')); err != nil {
			return err
		}
	}
	return sc.Err()
}

// committed reads how many records a running ingest has committed.
func committed(db string) (int64, error) {
	c, err := sqlitetest.Count(context.Background(), db)
	return c.Records, err
}

func humanInt(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
