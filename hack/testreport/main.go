// Command testreport reads `go test -json` on stdin and prints what a
// plain `go test` prints (each package's result, and the output of the
// tests that failed), then every test that skipped, with its reason.
//
// It exits 1 when a test or package failed, or when any test skipped under
// CI (CI set): there a skip hides a missing tool or data set.
//
//	go test -json ./... | go run ./hack/testreport
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of test2json's output (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type report struct {
	out     io.Writer
	pending map[string][]string // a running test's output, by package and test
	skipped []string
	failed  bool
}

func (r *report) add(e event) {
	key := e.Package + " " + e.Test
	switch {
	case e.Action == "build-output":
		fmt.Fprint(r.out, e.Output)
	case e.Action == "build-fail":
		r.failed = true
	case e.Test == "" && e.Action == "output":
		fmt.Fprint(r.out, e.Output) // the package's own lines: ok, FAIL, build errors
	case e.Test == "" && e.Action == "fail":
		r.failed = true
	case e.Test == "":
		// A package's own pass, or skip: it has no test files.
	case e.Action == "output":
		r.pending[key] = append(r.pending[key], e.Output)
	case e.Action == "fail":
		r.failed = true
		fmt.Fprint(r.out, strings.Join(r.pending[key], ""))
		delete(r.pending, key)
	case e.Action == "skip":
		r.skipped = append(r.skipped, fmt.Sprintf("%s %s: %s", e.Package, e.Test, reason(r.pending[key])))
		delete(r.pending, key)
	case e.Action == "pass":
		delete(r.pending, key)
	}
}

// reason is the last line a skipped test logged, its t.Skip message.
func reason(out []string) string {
	for i := len(out) - 1; i >= 0; i-- {
		line := strings.TrimSpace(out[i])
		if line != "" && !strings.HasPrefix(line, "--- SKIP") && !strings.HasPrefix(line, "=== ") {
			return line
		}
	}
	return "(no reason given)"
}

func run(in io.Reader, out io.Writer, ci bool) int {
	r := &report{out: out, pending: map[string][]string{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(out, sc.Text()) // not test2json: go's own errors
			r.failed = true
			continue
		}
		r.add(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(out, "testreport: reading go test -json: %v\n", err)
		return 1
	}
	fmt.Fprintf(out, "%d tests skipped\n", len(r.skipped))
	for _, s := range r.skipped {
		fmt.Fprintf(out, "  SKIP %s\n", s)
	}
	switch {
	case r.failed:
		return 1
	case ci && len(r.skipped) > 0:
		fmt.Fprintln(out, "FAIL: tests skipped under CI, where nothing may skip")
		return 1
	}
	return 0
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout, os.Getenv("CI") != ""))
}
