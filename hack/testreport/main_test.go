package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRun(t *testing.T) {
	const stream = `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:9: tmux not installed\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: want 2, got 3\n"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:3: fine\n"}
{"Action":"pass","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}
`
	for _, tc := range []struct {
		name   string
		stream string
		ci     bool
		code   int
		out    string
	}{
		{"a failure and a skip", stream, false, 1,
			"    b_test.go:3: want 2, got 3\nok  \tp\t0.1s\n1 tests skipped\n  SKIP p TestA: a_test.go:9: tmux not installed\n"},
		{"a skip, not in CI", strings.ReplaceAll(stream, `"fail"`, `"pass"`), false, 0,
			"ok  \tp\t0.1s\n1 tests skipped\n  SKIP p TestA: a_test.go:9: tmux not installed\n"},
		{"a skip in CI", strings.ReplaceAll(stream, `"fail"`, `"pass"`), true, 1,
			"ok  \tp\t0.1s\n1 tests skipped\n  SKIP p TestA: a_test.go:9: tmux not installed\nFAIL: tests skipped under CI, where nothing may skip\n"},
		{"a package without tests is no skipped test", `{"Action":"output","Package":"q","Output":"?   \tq\t[no test files]\n"}
{"Action":"skip","Package":"q"}
`, true, 0, "?   \tq\t[no test files]\n0 tests skipped\n"},
		{"a build error", "# p\nx.go:1: syntax error\n", false, 1, "# p\nx.go:1: syntax error\n0 tests skipped\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if code := run(strings.NewReader(tc.stream), &out, tc.ci); code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if d := cmp.Diff(tc.out, out.String()); d != "" {
				t.Errorf("output (-want +got):\n%s", d)
			}
		})
	}
}
