package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/internal/termsafe/termsafetest"
)

// writePayloadLog writes termsafetest's audit log to path.
func writePayloadLog(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, termsafetest.AuditLog(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writePayloadIncident writes an incident folder for eval whose family and
// log carry the payloads.
func writePayloadIncident(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writePayloadLog(t, filepath.Join(dir, "audit.log"))
	if err := os.WriteFile(filepath.Join(dir, "expected.json"), termsafetest.Expected(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// payloadTimeline ingests termsafetest's audit log into a timeline, and
// writes an incident folder for eval beside it (dir/zoo).
func payloadTimeline(t *testing.T) (dir, db string) {
	t.Helper()
	dir = t.TempDir()
	db = filepath.Join(dir, "t.db")
	log := filepath.Join(dir, "audit.log")
	writePayloadLog(t, log)
	if code, _, stderr := runCLI(t, "--db", db, "ingest", "audit", log); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, stderr)
	}
	writePayloadIncident(t, filepath.Join(dir, "zoo", "payload", "seed-1"))
	return dir, db
}

// TestNoEscapeReachesTheTerminal is the regression test of issue 15: it
// ingests an audit log whose clients put terminal escapes (a window title,
// erased lines, a clipboard write, a C1 CSI, a bidi override) in a user
// agent, an object's name and a status message, runs every text command
// over it, and checks that nothing a terminal acts on reaches stdout or
// stderr, and that the payload is shown, escaped, rather than dropped.
func TestNoEscapeReachesTheTerminal(t *testing.T) {
	dir, db := payloadTimeline(t)
	ref := "configmap/ml/" + termsafetest.Name
	tests := []struct {
		name  string
		args  []string
		shows string // the payload, escaped, somewhere in stdout or stderr
	}{
		{"timeline", []string{"timeline"}, termsafetest.NameEscaped},
		{"timeline wide", []string{"timeline", "-o", "wide"}, termsafetest.UserAgentEscaped},
		{"timeline where", []string{"timeline", "--where", `code >= 500 && userAgent.contains("PWNED")`}, termsafetest.NameEscaped},
		{"controlplane", []string{"controlplane"}, `\x1b]0;PWNED\x07x`},
		{"investigate", []string{"investigate"}, termsafetest.MessageEscaped},
		{"investigate markdown", []string{"investigate", "-o", "markdown"}, termsafetest.NameEscaped},
		{"slice", []string{"slice"}, ""},
		{"diff", []string{"diff"}, ""},
		{"sources", []string{"sources"}, ""},
		{"bisect start", []string{"bisect", "start", "--good", "2026-05-01T10:00:00Z", "--bad", "end"}, termsafetest.NameEscaped},
		{"bisect status", []string{"bisect", "status"}, termsafetest.NameEscaped},
		{"bisect log", []string{"bisect", "log"}, ""},
		{"history", []string{"history", ref}, `data["LR\x1b]0;KEY\a"]`},
		{"eval", []string{"eval", filepath.Join(dir, "zoo")}, `fam\x1b]0;PWNED\x07x/1\u202e`},
		// Errors that quote their input: a file name, a filter, a REF.
		{"ingest error", []string{"ingest", "audit", filepath.Join(dir, "no\x1b]0;FILE\x07.log")}, `no\x1b]0;FILE\x07.log`},
		{"where error", []string{"timeline", "--where", "user == \x1b]0;X\x07"}, `\x1b]0;X\x07`},
		{"history error", []string{"history", "configmap/ml/none\u202e\x1b[2J"}, `none\u202e\x1b[2J`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"--db", db}, tt.args...)...)
			for stream, s := range map[string]string{"stdout": stdout, "stderr": stderr} {
				if bad := termsafe.Unsafe(s, false); bad != "" {
					t.Errorf("exit %d: %s reaches %s:\n%s", code, bad, stream, s)
				}
			}
			if !strings.Contains(stdout+stderr, tt.shows) {
				t.Errorf("exit %d: the payload is not shown as %s:\nstdout:\n%s\nstderr:\n%s", code, tt.shows, stdout, stderr)
			}
		})
	}
}

// TestJSONKeepsItsOwnEscapes checks that JSON and YAML output bypass the
// terminal writer, byte for byte as before: they carry their own escapes of
// C0 controls (\u001b in JSON, \e in YAML) and pass bidi characters through.
func TestJSONKeepsItsOwnEscapes(t *testing.T) {
	dir, db := payloadTimeline(t)
	for _, tt := range []struct {
		args      []string
		own, bidi string
	}{
		{[]string{"timeline", "-o", "json"}, `\u001b[1A`, "\u202e"},
		{[]string{"timeline", "-o", "jsonl"}, `\u001b]0;PWNED\u0007x/1`, "\u202e"},
		{[]string{"investigate", "-o", "json"}, `\u001b]52;c;`, "\u202e"},
		{[]string{"controlplane", "-o", "json"}, `\u001b]0;PWNED\u0007x`, ""},
		{[]string{"eval", filepath.Join(dir, "zoo"), "-o", "yaml"}, `\e]0;PWNED\ax/1`, "\u202e"},
		{[]string{"timeline", "-o", "yaml"}, `\e[1A`, "\u202e"},
		{[]string{"investigate", "-o", "yaml"}, `\e]52;c;`, "\u202e"},
		{[]string{"controlplane", "-o", "yaml"}, `\e]0;PWNED\ax`, ""},
	} {
		t.Run(tt.args[0]+" -o "+tt.args[len(tt.args)-1], func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"--db", db}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if !strings.Contains(stdout, tt.own) || !strings.Contains(stdout, tt.bidi) {
				t.Errorf("want %s and the bidi override %q as they were:\n%s", tt.own, tt.bidi, stdout)
			}
			if strings.Contains(stdout, `\x1b`) || strings.Contains(stdout, `\u202e`) {
				t.Errorf("the output went through the terminal writer:\n%s", stdout)
			}
		})
	}
}
