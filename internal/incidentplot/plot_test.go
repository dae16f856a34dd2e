package incidentplot

import (
	"bytes"
	"flag"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/analyze/controlplane"
	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/timeline"
)

var update = flag.Bool("update", false, "rewrite golden files")

var t0 = time.Date(2026, 11, 30, 8, 52, 0, 0, time.UTC)

// incident is a made-up incident: a quiet baseline, a change, then bad
// observations; an episode later; optionally a burst of API requests.
func incident(load bool) *Data {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	rep := &investigate.Report{
		Window:   investigate.Window{Start: t0, End: at(240)},
		Bad:      "reason == \"OOMKilled\"",
		Boundary: &investigate.Boundary{LastGood: at(120), FirstBad: at(130), IncidentEnd: at(170)},
		Slice:    &investigate.Slice{Where: map[string]string{"owner/Job": "vision-train"}},
		Changes: []investigate.Suspect{
			{Rank: 1, Ref: "ConfigMap/ml/trainer-env", Dimension: "configmap/trainer-env/LR", From: "0.001", To: "0.1", At: at(118), By: "alice"},
			{Rank: 2, Ref: "Job/ml/vision-train", Dimension: "created", From: "", To: "Job", At: at(40)},
			// a name from the audit log, with a terminal escape and a bidi override
			{Rank: 3, Ref: "Pod/ml/x\x1b]0;PWNED\x07\u202eevil", Dimension: "image", From: "a", To: "b", At: at(60)},
			{Rank: 4, Ref: "Node/n1", Dimension: "difference", Kind: "difference"}, // no time: no marker
		},
		Episodes: []investigate.Episode{{Boundary: &investigate.Boundary{FirstBad: at(200), IncidentEnd: at(215)}}},
	}
	d := &Data{Report: rep}
	for i := range 48 {
		b := timeline.Bucket{Start: at(float64(i * 5)), End: at(float64(i*5 + 5)), All: int64(20 + (i*7)%13)}
		if s := i * 5; s >= 130 && s < 170 || s >= 200 && s < 215 {
			b.Bad = int64(5 + i%4)
		}
		d.Buckets = append(d.Buckets, b)
	}
	if load {
		var rate []controlplane.SecondCount
		for s := int64(100); s < 160; s++ {
			n := int64(2)
			if s >= 125 && s < 135 {
				n = 300 - (s-125)*20
			}
			rate = append(rate, controlplane.SecondCount{Sec: at(float64(s)).Unix(), Count: n})
		}
		d.Load = &Load{Class: "LIST pods (cluster) by trainer", Rate: rate, Start: at(125), End: at(135), PeakRps: 300,
			Fix: &controlplane.Fix{Kind: "jitter", SimulatedPeakRps: 31.5}}
	}
	return d
}

func TestWriteSVG(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    *Data
	}{
		{"incident", incident(false)},
		{"load", incident(true)},
		{"nothing-bad", &Data{Report: &investigate.Report{Window: investigate.Window{Start: t0, End: t0.Add(time.Minute)}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, tc.d, "svg"); err != nil {
				t.Fatal(err)
			}
			got := buf.String()
			if strings.ContainsAny(got, "\x1b\x07\u202e") {
				t.Errorf("the SVG holds a raw control or bidi character from the data")
			}
			path := filepath.Join("testdata", t.Name()+".golden")
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("SVG (-want +got)\n%s", diff)
			}
		})
	}
}

// TestWriteSVGDeterministic: the same data draws the same bytes.
func TestWriteSVGDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if err := Write(&a, incident(true), "svg"); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, incident(true), "svg"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two draws of the same data differ")
	}
}

func TestWritePNG(t *testing.T) {
	for _, tc := range []struct {
		name          string
		d             *Data
		width, height int
	}{
		// 900 x (300 + 8 + 4 x 14) points at 96 dpi
		{"incident", incident(false), 1200, 485},
		// 900 x (2 x 240 + 8 + 4 x 14) points
		{"load", incident(true), 1200, 725},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, tc.d, "png"); err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(&buf)
			if err != nil {
				t.Fatalf("the PNG does not decode: %v", err)
			}
			if got := img.Bounds().Size(); got != (image.Point{X: tc.width, Y: tc.height}) {
				t.Errorf("size %v, want %dx%d", got, tc.width, tc.height)
			}
			// Not blank: white background, and the bad bars' red somewhere.
			colours := map[[3]uint32]bool{}
			red := false
			b := img.Bounds()
			for y := b.Min.Y; y < b.Max.Y; y += 2 {
				for x := b.Min.X; x < b.Max.X; x += 2 {
					r, g, bl, _ := img.At(x, y).RGBA()
					colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
					if r>>8 == 214 && g>>8 == 39 && bl>>8 == 40 {
						red = true
					}
				}
			}
			if len(colours) < 10 {
				t.Errorf("only %d colours: a blank picture?", len(colours))
			}
			if !red {
				t.Error("no bad bar (red) in the picture")
			}
		})
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		path, want string
		ok         bool
	}{
		{"a.svg", "svg", true}, {"dir/A.PNG", "png", true}, {"a.gif", "", false}, {"svg", "", false},
	} {
		got, ok := Format(tc.path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Format(%q) = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
	if err := Write(&bytes.Buffer{}, incident(false), "gif"); err == nil {
		t.Error("Write in gif: no error")
	}
}
