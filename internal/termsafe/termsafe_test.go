package termsafe

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The payloads of issue 15, each class of what a terminal acts on.
var payloads = []struct {
	name, in                  string
	wantField, wantText, want string // want: Styled
}{
	{"plain", "kubelet/v1.37.2 (linux/amd64)", "kubelet/v1.37.2 (linux/amd64)", "kubelet/v1.37.2 (linux/amd64)", "kubelet/v1.37.2 (linux/amd64)"},
	{"utf-8 kept", "Grüße ✓ 日本", "Grüße ✓ 日本", "Grüße ✓ 日本", "Grüße ✓ 日本"},
	{"window title OSC 0", "\x1b]0;PWNED\x07x/1", `\x1b]0;PWNED\x07x/1`, `\x1b]0;PWNED\x07x/1`, `\x1b]0;PWNED\x07x/1`},
	{"erase lines CSI", "p\x1b[1A\x1b[2Kq", `p\x1b[1A\x1b[2Kq`, `p\x1b[1A\x1b[2Kq`, `p\x1b[1A\x1b[2Kq`},
	{"clipboard OSC 52", "\x1b]52;c;UFdORUQ=\x07", `\x1b]52;c;UFdORUQ=\x07`, `\x1b]52;c;UFdORUQ=\x07`, `\x1b]52;c;UFdORUQ=\x07`},
	{"OSC ended by ST", "\x1b]0;t\x1b\\", `\x1b]0;t\x1b\`, `\x1b]0;t\x1b\`, `\x1b]0;t\x1b\`},
	{"newline and tab", "a\nb\tc", `a\nb\tc`, "a\nb\tc", "a\n" + `b\tc`},
	{"carriage return", "ok\rFAIL", `ok\rFAIL`, `ok\rFAIL`, `ok\rFAIL`},
	{"NUL and DEL", "a\x00b\x7f", `a\x00b\x7f`, `a\x00b\x7f`, `a\x00b\x7f`},
	{"C1 CSI and OSC", "a\u009b2Jb\u009d0;t\u009c", `a\u009b2Jb\u009d0;t\u009c`, `a\u009b2Jb\u009d0;t\u009c`, `a\u009b2Jb\u009d0;t\u009c`},
	{"C1 NEL", "a\u0085b", `a\u0085b`, `a\u0085b`, `a\u0085b`},
	{"bidi override", "evil\u202etxt.exe", `evil\u202etxt.exe`, `evil\u202etxt.exe`, `evil\u202etxt.exe`},
	{"bidi isolates and marks", "\u2066a\u2069\u200f\u061c", `\u2066a\u2069\u200f\u061c`, `\u2066a\u2069\u200f\u061c`, `\u2066a\u2069\u200f\u061c`},
	{"line separator", "a\u2028b", `a\u2028b`, `a\u2028b`, `a\u2028b`},
	{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`, `a\xffb\xc3`, `a\xffb\xc3`},
	{"U+FFFD itself kept", "a\uFFFDb", "a\uFFFDb", "a\uFFFDb", "a\uFFFDb"},
	{"SGR kept only when styled", "\x1b[1;38;5;196mred\x1b[0m", `\x1b[1;38;5;196mred\x1b[0m`, `\x1b[1;38;5;196mred\x1b[0m`, "\x1b[1;38;5;196mred\x1b[0m"},
	{"truncated SGR", "\x1b[1", `\x1b[1`, `\x1b[1`, `\x1b[1`},
	{"backslash left alone", `C:\x1b`, `C:\x1b`, `C:\x1b`, `C:\x1b`},
}

func TestEscape(t *testing.T) {
	for _, tt := range payloads {
		t.Run(tt.name, func(t *testing.T) {
			got := []string{Field(tt.in), Text(tt.in), Styled(tt.in)}
			want := []string{tt.wantField, tt.wantText, tt.want}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("[Field Text Styled] (-want +got)\n%s", diff)
			}
			for i, s := range got {
				if bad := Unsafe(s, i == 2); bad != "" {
					t.Errorf("%q still holds %s", s, bad)
				}
			}
		})
	}
}

// TestWriterSplitWrites writes each payload one byte at a time: a UTF-8
// sequence split across writes must neither be escaped as invalid nor slip
// through.
func TestWriterSplitWrites(t *testing.T) {
	for _, tt := range payloads {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewWriter(&buf)
			for i := range len(tt.in) {
				if n, err := w.Write([]byte{tt.in[i]}); n != 1 || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantText, buf.String()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestRaw(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Write([]byte("é"[:1]))
	if Raw(w) != &buf {
		t.Fatal("Raw(w) is not the writer w escapes for")
	}
	if got, want := buf.String(), `\xc3`; got != want {
		t.Errorf("Raw did not flush the held byte: got %q, want %q", got, want)
	}
	if Raw(&buf) != &buf {
		t.Error("Raw of a plain writer is not itself")
	}
}

func TestUnsafe(t *testing.T) {
	tests := []struct {
		in   string
		sgr  bool
		want string
	}{
		{"plain\ttext\n", false, ""},
		{"a\x1bb", false, "ESC at byte 1"},
		{"\x1b[1mbold\x1b[0m", true, ""},
		{"\x1b[1mbold\x1b[0m", false, "ESC at byte 0"},
		{"a\x07", false, "BEL at byte 1"},
		{"a\u009bb", false, "U+009B at byte 1"},
		{"ab\u202e", false, "U+202E at byte 2"},
		{"\xff", false, "invalid UTF-8 at byte 0"},
	}
	for _, tt := range tests {
		if got := Unsafe(tt.in, tt.sgr); got != tt.want {
			t.Errorf("Unsafe(%q, %v) = %q, want %q", tt.in, tt.sgr, got, tt.want)
		}
	}
}

func FuzzText(f *testing.F) {
	for _, tt := range payloads {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, got := range []string{Field(s), Text(s)} {
			if bad := Unsafe(got, false); bad != "" {
				t.Errorf("escaped %q still holds %s: %q", s, bad, got)
			}
		}
		if strings.ContainsAny(Field(s), "\n\t") {
			t.Errorf("Field(%q) holds a newline or tab", s)
		}
	})
}

type source string

func TestFprintf(t *testing.T) {
	var buf bytes.Buffer
	Fprintf(&buf, "%s\t%s\t%d\t%v\t%s\n", "ua\x1b]0;PWNED\x07\tx/1", source("audit\n"), 42, time.Second, errors.New("bad\nline"))
	want := `ua\x1b]0;PWNED\x07\tx/1` + "\t" + `audit\n` + "\t42\t1s\t" + `bad\nline` + "\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// BenchmarkWriter is the cost on a timeline table: every byte of the
// output passes the Writer.
func BenchmarkWriter(b *testing.B) {
	line := []byte("2026-05-01T10:05:00.000Z  audit   get          500   1.0ms    system:serviceaccount:ml:trainer  configmaps ml/trainer-env-0042\n")
	w := NewWriter(io.Discard)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		w.Write(line)
	}
}
