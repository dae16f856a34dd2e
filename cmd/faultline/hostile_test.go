package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// auditLines writes n valid audit lines as one string.
func auditLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"kind":"Event","level":"Metadata","auditID":"a%d","stage":"ResponseComplete","verb":"get","user":{"username":"u"},"requestReceivedTimestamp":"2026-05-01T10:00:%02dZ"}`+"\n", i, i%60)
	}
	return b.String()
}

// exitOf runs cmd to its end, failing the test if it outlives limit.
func exitOf(t *testing.T, cmd *exec.Cmd, limit time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(limit):
		cmd.Process.Kill()
		t.Fatalf("%v still running after %s", cmd.Args[1:], limit)
		return -1
	}
}

// TestInterruptStopsBlockedReads runs the real binary on input that never
// ends: a FIFO nobody writes, named as a file, and a pipe on stdin that
// sends 20 lines and then nothing. SIGINT (and SIGTERM) must end each
// command promptly with exit 130, keeping what was read. Before, every one
// of them waited forever.
func TestInterruptStopsBlockedReads(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string // FIFO is replaced by the path of a FIFO nobody writes
		stdin string   // written to a stdin pipe held open
		sig   os.Signal
		keep  int64 // audit records to find committed
	}{
		{"ingest audit FIFO", []string{"ingest", "audit", "FIFO"}, "", os.Interrupt, 0},
		{"ingest objects FIFO", []string{"ingest", "objects", "FIFO"}, "", os.Interrupt, 0},
		{"ingest versions FIFO", []string{"ingest", "versions", "FIFO"}, "", syscall.SIGTERM, 0},
		{"ingest audit - with a slow stdin", []string{"ingest", "audit", "-"}, auditLines(20), os.Interrupt, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fifo := filepath.Join(dir, "input.fifo")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(dir, "t.db")
			args := []string{"--db", db}
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "FIFO", fifo))
			}
			cmd := faultline(context.Background(), args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if tc.stdin != "" {
				w, err := cmd.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				go w.Write([]byte(tc.stdin))
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond) // well past the 1 s commit
			cmd.Process.Signal(tc.sig)
			if code := exitOf(t, cmd, 5*time.Second); code != 130 {
				t.Errorf("exit %d, want 130\n%s", code, stderr.String())
			}
			if tc.keep > 0 {
				if got := count(t, db).Records; got != tc.keep {
					t.Errorf("%d records kept, want %d\n%s", got, tc.keep, stderr.String())
				}
			}
		})
	}
}

// TestFoldersNeverLeft gives each folder-reading command a folder holding a
// symlink out of it, a FIFO, and a link to /dev/zero besides its good
// evidence. The special entries are refused by name (exit 1) and nothing
// outside the folder is read or echoed; a symlink to a file inside is read.
// Before, replay copied evil.log -> the secret into /tmp and echoed it in
// warnings and left its temp folders behind, a link to /dev/zero crashed it
// (out of memory), the FIFO hung every command, and ingest audit skipped
// the symlinked file inside without a word.
func TestFoldersNeverLeft(t *testing.T) {
	const secret = "root:TOPSECRET-4b1f"
	outside := filepath.Join(t.TempDir(), "shadow")
	os.WriteFile(outside, []byte(secret+"\n"), 0o600)
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ml","uid":"u1","resourceVersion":"1","creationTimestamp":"2026-05-01T10:00:00Z"}}`
	for _, tc := range []struct {
		name  string
		files map[string]string // name -> content; "->X" a symlink to X
		args  []string          // DIR is the folder
		want  []string          // in stderr
	}{
		{"ingest audit", map[string]string{"audit.log": auditLines(3), "audit-link.log": "->audit.log", "evil.log": "->" + outside, "zero.log": "->/dev/zero", "fifo.log": "fifo"},
			[]string{"ingest", "audit", "DIR"}, []string{"done DIR/audit-link.log: 3 records", "done DIR/audit.log: 0 records, 3 duplicates", "DIR/evil.log: a symlink leaving DIR: not read", "DIR/fifo.log: a FIFO: not read", "DIR/zero.log: a symlink leaving DIR: not read"}},
		{"ingest objects", map[string]string{"pods.json": pod, "evil.json": "->" + outside, "fifo.yaml": "fifo"},
			[]string{"ingest", "objects", "DIR"}, []string{"done DIR/pods.json", "DIR/evil.json: a symlink leaving DIR: not read", "DIR/fifo.yaml: a FIFO: not read"}},
		{"replay", map[string]string{"audit.log": auditLines(3), "evil.log": "->" + outside},
			[]string{"replay", "DIR"}, []string{"DIR/evil.log: a symlink leaving DIR: not read"}},
		{"replay /dev/zero", map[string]string{"audit.log": auditLines(3), "zero.log": "->/dev/zero"},
			[]string{"replay", "DIR"}, []string{"DIR/zero.log: a symlink leaving DIR: not read"}},
		{"replay FIFO", map[string]string{"audit.log": auditLines(3), "fifo.log": "fifo"},
			[]string{"replay", "DIR"}, []string{"DIR/fifo.log: a FIFO: not read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "evidence")
			tmp := filepath.Join(base, "tmp")
			os.Mkdir(dir, 0o755)
			os.Mkdir(tmp, 0o755)
			for name, content := range tc.files {
				p := filepath.Join(dir, name)
				var err error
				switch {
				case content == "fifo":
					err = syscall.Mkfifo(p, 0o644)
				case strings.HasPrefix(content, "->"):
					err = os.Symlink(strings.TrimPrefix(content, "->"), p)
				default:
					err = os.WriteFile(p, []byte(content), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			var args []string
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "DIR", dir))
			}
			cmd := faultline(context.Background(), append([]string{"--db", filepath.Join(base, "t.db")}, args...)...)
			cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
			out, errOut := &strings.Builder{}, &strings.Builder{}
			cmd.Stdout, cmd.Stderr = out, errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if code := exitOf(t, cmd, 60*time.Second); code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "DIR", dir); !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if strings.Contains(out.String()+errOut.String(), "TOPSECRET") {
				t.Errorf("the file outside the folder was read:\n%s%s", out, errOut)
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Errorf("left behind in TMPDIR: %v", left)
			}
		})
	}
}
