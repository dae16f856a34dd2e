package tui_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/muesli/termenv"

	"github.com/faultline/faultline/ingest/audit"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/internal/termsafe/termsafetest"
	"github.com/faultline/faultline/timeline/sqlite"
	"github.com/faultline/faultline/tui"
)

// TestNoEscapeReachesTheScreen is issue 15 in the TUI: over a timeline
// whose clients put terminal escapes in a user agent, an object's name and
// a message, every screen, in colour and without, holds no control
// character but the styles' own SGR sequences, and shows the payloads
// escaped. The ANSI-stripped screens are goldens, so a reviewer sees what
// a user would.
func TestNoEscapeReachesTheScreen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(log, termsafetest.AuditLog(), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(ctx, filepath.Join(dir, "t.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := audit.Ingest(ctx, s, []string{log}, audit.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, colour := range []bool{false, true} {
		name := map[bool]string{false: "no-colour", true: "colour"}[colour]
		t.Run(name, func(t *testing.T) {
			m := tui.New(ctx, s, tui.Options{Now: testNow, NoColor: !colour, Source: "payload\x1b]0;DB\x07.db", ExportDir: t.TempDir()})
			if colour {
				// Tests have no terminal: force the colours a terminal would get.
				lipgloss.SetColorProfile(termenv.ANSI)
				t.Cleanup(func() { lipgloss.SetColorProfile(termenv.Ascii) })
			}
			var v tea.Model = drive(t, m, func() tea.Msg { return tea.WindowSizeMsg{Width: 160, Height: 40} })
			v = drive(t, v, m.Init())
			v = press(t, v, "end")
			var all strings.Builder
			for _, sc := range []struct{ name, key string }{
				{"timeline", "1"}, {"diff", "2"}, {"slice", "3"}, {"controlplane", "4"},
				{"bisect", "5"}, {"record", "1 up enter"}, {"record-scrolled", "pgdown"}, {"help", "esc ?"},
			} {
				v = press(t, v, strings.Fields(sc.key)...)
				view := v.View()
				if bad := termsafe.Unsafe(view, true); bad != "" {
					t.Errorf("%s: %s reaches the screen:\n%s", sc.name, bad, view)
				}
				if colour && !strings.Contains(view, "\x1b[") {
					t.Errorf("%s: the styles' own escapes were lost:\n%q", sc.name, view)
				}
				if !colour {
					t.Run(sc.name, func(t *testing.T) {
						golden.RequireEqual(t, []byte(evidenceFile.ReplaceAllString(plain(v), "  file        <the replayed evidence file>\n")))
					})
				}
				all.WriteString(plain(v))
			}
			for _, want := range []string{termsafetest.NameEscaped, `\x1b]0;PWNED\x07x`, `\x1b]52;c;UFdORUQ=`, `payload\x1b]0;DB\x07.db`} {
				if !strings.Contains(all.String(), want) {
					t.Errorf("no screen shows %s:\n%s", want, all.String())
				}
			}
		})
	}
}
