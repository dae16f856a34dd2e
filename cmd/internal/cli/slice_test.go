package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sliceRSCube = `min,cdn,bitrate,value,cnt
60,1,500,1,100
60,1,2000,2,100
60,2,500,0,100
60,2,2000,1,100
120,1,500,2,100
120,1,2000,1,100
120,2,500,1,100
120,2,2000,0,100
180,1,500,1,100
180,1,2000,30,100
180,2,500,2,100
180,2,2000,1,100
`

func gzipSlice(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func runSliceCLI(t *testing.T, stdin []byte, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &Factory{
		IO:     IOStreams{In: bytes.NewReader(stdin), Out: &out, ErrOut: &errOut},
		Getenv: func(string) string { return "" },
		Now:    func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) },
	}
	code = Run(context.Background(), args, f)
	return code, out.String(), errOut.String()
}

// TestSliceCubeInputs reads the same cube plain and gzip-compressed, from a
// file and from stdin, and expects the same causes.
func TestSliceCubeInputs(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "rs.csv")
	gz := filepath.Join(dir, "rs.csv.gz")
	if err := os.WriteFile(plain, []byte(sliceRSCube), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gz, gzipSlice(t, sliceRSCube), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--time-column", "min", "--bad", "value", "--total", "cnt", "--at", "180", "-o", "json"}
	tests := []struct {
		name  string
		file  string
		stdin []byte
	}{
		{"file", plain, nil},
		{"gzip file", gz, nil},
		{"stdin", "-", []byte(sliceRSCube)},
		{"gzip stdin", "-", gzipSlice(t, sliceRSCube)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runSliceCLI(t, tt.stdin, append([]string{"slice", "--cube", tt.file}, flags...)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, `"cause": "bitrate=2000 & cdn=1"`) {
				t.Errorf("want the cause bitrate=2000 & cdn=1, got:\n%s", out)
			}
		})
	}
}

// TestSliceCubeCorruptGzip guards against a truncated gzip file being read
// as an empty or partial cube: it must fail, naming the file.
func TestSliceCubeCorruptGzip(t *testing.T) {
	z := gzipSlice(t, sliceRSCube)
	code, _, errOut := runSliceCLI(t, z[:len(z)/2], "slice", "--cube", "-", "--time-column", "min", "--bad", "value", "--total", "cnt", "--at", "180")
	if code != exitFailure || !strings.HasPrefix(errOut, "error: <stdin>") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming <stdin>", code, errOut)
	}
}
