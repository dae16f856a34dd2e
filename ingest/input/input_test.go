package input

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/ulikunitz/xz"
)

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func gz(data string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(data))
	w.Close()
	return b.Bytes()
}

func readAll(t *testing.T, s *Source) (lines []string, errs []string) {
	t.Helper()
	for {
		l, no, err := s.Line()
		if errors.Is(err, io.EOF) {
			return
		}
		var tl *ErrLineTooLong
		if errors.As(err, &tl) {
			errs = append(errs, "too long at "+itoa(no))
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, itoa(no)+":"+string(l))
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestLines(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("a", 3<<20) // longer than the 1 MiB read buffer
	tests := []struct {
		name     string
		data     []byte
		max      int
		want     []string
		wantErrs []string
	}{
		{"plain", []byte("a\nb\n"), 0, []string{"1:a", "2:b"}, nil},
		{"no final newline", []byte("a\nb"), 0, []string{"1:a", "2:b"}, nil},
		{"crlf", []byte("a\r\nb\r\n"), 0, []string{"1:a", "2:b"}, nil},
		{"bom", []byte("\xef\xbb\xbfa\n"), 0, []string{"1:a"}, nil},
		{"gzip by magic, not name", gz("a\nb\n"), 0, []string{"1:a", "2:b"}, nil},
		{"empty", nil, 0, nil, nil},
		{"long line kept", []byte("a\n" + long + "\nb\n"), 0, []string{"1:a", "2:" + long, "3:b"}, nil},
		{"over-long line skipped", []byte("a\n" + long + "\nb\n"), 1 << 20, []string{"1:a", "3:b"}, []string{"too long at 2"}},
		{"over-long last line", []byte("a\n" + long), 1 << 20, []string{"1:a"}, []string{"too long at 2"}},
		{"small limit", []byte("abcdef\nab\n"), 4, []string{"2:ab"}, []string{"too long at 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".log")
			write(t, path, tt.data)
			s, err := Open(context.Background(), path, tt.max)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got, errs := readAll(t, s)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines (-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErrs, errs); diff != "" {
				t.Errorf("errors (-want +got)\n%s", diff)
			}
			s.Drain()
			if s.BytesRead() != int64(len(tt.data)) || len(s.SHA256()) != 64 {
				t.Errorf("read %d of %d bytes", s.BytesRead(), len(tt.data))
			}
		})
	}
}

func TestExpandOrdersRotatedLogsByFirstRecord(t *testing.T) {
	dir := t.TempDir()
	// lumberjack backups, a logrotate number and the live file: names sort
	// in no useful order, first records do.
	files := map[string]string{
		"audit.log":                         "3",
		"audit-2026-05-01T10-00-00.000.log": "1",
		"audit.log.1.gz":                    "2",
		"README.md":                         "",
		".hidden":                           "0",
	}
	for name, first := range files {
		write(t, filepath.Join(dir, name), []byte(first))
	}
	got, skipped, err := Expand([]string{dir, "-"}, func(path string) (int64, error) {
		b, _ := os.ReadFile(path)
		if len(b) == 0 {
			return 0, ErrEmpty
		}
		return int64(b[0]), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "audit-2026-05-01T10-00-00.000.log"), filepath.Join(dir, "audit.log.1.gz"), filepath.Join(dir, "audit.log"), "-"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]Skipped{{filepath.Join(dir, "README.md"), ErrEmpty}}, skipped, cmpopts.EquateErrors()); diff != "" {
		t.Errorf("skipped (-want +got)\n%s", diff)
	}
	if _, _, err := Expand([]string{filepath.Join(dir, "nope")}, nil); err == nil {
		t.Error("missing path: want an error")
	}
}

// An xz-compressed log reads as its lines, found by its magic bytes.
func TestOpenXZ(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log.xz")
	var b bytes.Buffer
	w, err := xz.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("one\ntwo\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []string
	for {
		line, _, err := s.Line()
		if err != nil {
			break
		}
		got = append(got, string(line))
	}
	if diff := cmp.Diff([]string{"one", "two"}, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// numbered returns n lines "line 1".."line n", each ending in a newline.
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	return b.String()
}

func xzOf(t *testing.T, data string) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := xz.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(data))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDamagedStreamsKeepWhatDecoded corrupts compressed files the ways
// disks, copies and crashes do. Every line that decodes before the fault is
// returned (as many as zcat prints, less an incomplete last one), then one
// *DamagedError naming the fault and where it surfaced, then io.EOF. The
// readers these replaced lost up to a chunk of lines before the fault and
// stopped a directory walk at the damaged file.
func TestDamagedStreamsKeepWhatDecoded(t *testing.T) {
	const n = 5000
	text := numbered(n)
	full := gz(text)
	badCRC := bytes.Clone(full)
	badCRC[len(badCRC)-8] ^= 0xff // the CRC-32 in the trailer
	truncated := full[:len(full)*3/4]
	xzFull := xzOf(t, text)
	// What the decompressor yields from the truncated stream: the reference
	// for "everything decodable", as zcat prints it.
	zr, _ := gzip.NewReader(bytes.NewReader(truncated))
	decodable, _ := io.ReadAll(zr)
	completeLines := int64(bytes.Count(decodable, []byte("\n")))
	if completeLines < 100 || completeLines >= n {
		t.Fatalf("the truncated stream decodes %d lines: the test needs a cut inside it", completeLines)
	}
	tests := []damagedCase{
		{"bad CRC", badCRC, n, false, "gzip: gzip: invalid checksum"},
		{"trailing garbage", append(bytes.Clone(full), "garbage after the stream"...), n, false, "gzip: gzip: invalid header"},
		{"truncated", truncated, completeLines, true, "gzip: unexpected EOF"},
		{"bad header", append([]byte{0x1f, 0x8b, 99}, full[3:]...), 0, false, "gzip: gzip: invalid header"},
		{"xz truncated", xzFull[:len(xzFull)-20], -1, false, "xz: "},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkDamagedStream(t, dir, tt) })
	}
	checkDamagedDocument(t, dir, truncated, decodable)
}

// damagedCase is one way a compressed file is damaged, and what reading it
// line by line must give.
type damagedCase struct {
	name      string
	data      []byte
	wantLines int64 // complete lines returned before the damage
	wantLost  bool  // an incomplete line was dropped
	wantErr   string
}

// checkDamagedStream writes tt.data to dir and reads it line by line: the
// lines before the fault in order, then one *DamagedError that counts them
// and names the path, the fault and where it surfaced.
func checkDamagedStream(t *testing.T, dir string, tt damagedCase) {
	path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".log.gz")
	write(t, path, tt.data)
	s, err := Open(context.Background(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, dmg := readUntilDamage(t, s)
	if dmg == nil {
		t.Fatalf("read %d lines and no damage reported", got)
	}
	if tt.wantLines >= 0 && got != tt.wantLines {
		t.Errorf("kept %d lines, want %d", got, tt.wantLines)
	}
	if dmg.Lines != got || dmg.Path != path || (dmg.Lost > 0) != tt.wantLost || dmg.Offset <= 0 && tt.wantLines > 0 {
		t.Errorf("damage %+v after %d lines", dmg, got)
	}
	if !strings.Contains(dmg.Error(), tt.wantErr) {
		t.Errorf("damage reads %q, want it to contain %q", dmg, tt.wantErr)
	}
}

// readUntilDamage reads s to io.EOF, checking each line is "line N" for
// its number N, and returns the number of the last line and the damage
// reported, if any.
func readUntilDamage(t *testing.T, s *Source) (int64, *DamagedError) {
	t.Helper()
	var got int64
	var dmg *DamagedError
	for {
		l, no, err := s.Line()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.As(err, &dmg) {
			continue // then io.EOF
		}
		if err != nil {
			t.Fatal(err)
		}
		if want := "line " + itoa(no); string(l) != want {
			t.Fatalf("line %d reads %q", no, l)
		}
		got = no
	}
	return got, dmg
}

// checkDamagedDocument: the whole-document reader returns every decodable
// byte of the truncated stream, then the damage.
func checkDamagedDocument(t *testing.T, dir string, truncated, decodable []byte) {
	t.Helper()
	path := filepath.Join(dir, "doc.gz")
	write(t, path, truncated)
	s, err := Open(context.Background(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := io.ReadAll(s.Reader())
	var dmg *DamagedError
	if !errors.As(err, &dmg) || !bytes.Equal(b, decodable) {
		t.Errorf("Reader: %d of %d decodable bytes, err %v", len(b), len(decodable), err)
	}
}

// FuzzSource: no file, however damaged (plain, gzip or xz by its magic),
// panics the reader or hangs it; a *DamagedError comes at most once and
// only io.EOF follows it, and every line before it is returned.
func FuzzSource(f *testing.F) {
	text := numbered(50)
	full := gz(text)
	f.Add([]byte(text))
	f.Add(full)
	f.Add(full[:len(full)/2])
	f.Add(append(bytes.Clone(full), "trailing garbage"...))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0})
	f.Add([]byte{0xfd, '7', 'z', 'X', 'Z', 0, 1, 2})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "f")
		write(t, path, data)
		s, err := Open(context.Background(), path, 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		damaged := false
		for i := 0; ; i++ {
			_, _, err := s.Line()
			var dmg *DamagedError
			var tl *ErrLineTooLong
			switch {
			case errors.Is(err, io.EOF):
				return
			case errors.As(err, &dmg):
				if damaged {
					t.Fatal("two damage reports")
				}
				damaged = true
			case errors.As(err, &tl):
			case err != nil:
				t.Fatalf("unexpected error %v", err)
			case damaged:
				t.Fatal("a line after the damage")
			}
			if i > 2000*len(data)+10 { // deflate expands at most ~1032x
				t.Fatal("more lines than bytes")
			}
		}
	})
}
