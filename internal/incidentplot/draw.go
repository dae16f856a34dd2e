package incidentplot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/internal/termsafe"
)

// Geometry: 900 x (300 + 170 + key) points; a PNG at 96 dpi is 1200
// pixels wide.
const (
	width       = 900 * vg.Inch / 72
	mainHeight  = 300 * vg.Inch / 72 // one plot
	loadHeight  = 240 * vg.Inch / 72 // each of two, when there is a load plot
	keyLine     = 14 * vg.Inch / 72
	keyPad      = 8 * vg.Inch / 72
	legendWidth = 250 * vg.Inch / 72
	dpi         = 96
	maxMarkers  = 5
	maxLabel    = 150 // runes of a key line
)

var (
	colAll      = color.NRGBA{R: 190, G: 196, B: 204, A: 255}
	colBad      = color.NRGBA{R: 214, G: 39, B: 40, A: 255}
	colGood     = color.NRGBA{R: 44, G: 160, B: 44, A: 255}
	colIncident = color.NRGBA{R: 214, G: 39, B: 40, A: 28}
	colEpisode  = color.NRGBA{R: 255, G: 127, B: 14, A: 48}
	colChange   = color.NRGBA{R: 31, G: 119, B: 180, A: 255}
	colRate     = color.NRGBA{R: 148, G: 103, B: 189, A: 255}
	colFix      = color.NRGBA{R: 44, G: 160, B: 44, A: 255}
)

// Format returns the image format a path's extension names: "svg" or
// "png"; ok is false for any other.
func Format(path string) (format string, ok bool) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		return "svg", true
	case ".png":
		return "png", true
	}
	return "", false
}

// Size returns the picture's size in points.
func Size(d *Data) (w, h vg.Length) {
	h = mainHeight + keyPad + vg.Length(len(keyLines(d)))*keyLine
	if d.Load != nil {
		h += 2*loadHeight - mainHeight
	}
	return width, h
}

// Write draws d in format ("svg" or "png").
func Write(w io.Writer, d *Data, format string) error {
	wd, ht := Size(d)
	var cw vg.CanvasWriterTo
	switch format {
	case "svg":
		cw = vgsvg.New(wd, ht)
	case "png":
		cw = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(wd, ht), vgimg.UseDPI(dpi))}
	default:
		return fmt.Errorf("plot: unknown format %q: want svg or png", format)
	}
	c := draw.New(cw)
	if err := drawAll(c, d); err != nil {
		return err
	}
	_, err := cw.WriteTo(w)
	return err
}

// drawAll lays out the incident plot and the load plot (axes aligned, one
// above the other), each legend in a column at its right, and the key
// below.
func drawAll(c draw.Canvas, d *Data) error {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	lines := keyLines(d)
	keyH := keyPad + vg.Length(len(lines))*keyLine
	main, err := incidentPlot(d)
	if err != nil {
		return err
	}
	plots := [][]*plot.Plot{{main}}
	if d.Load != nil {
		lp, err := loadPlot(d)
		if err != nil {
			return err
		}
		plots = append(plots, []*plot.Plot{lp})
	}
	area := draw.Crop(c, 0, -legendWidth, keyH, 0)
	tiles := plot.Align(plots, draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Points(6)}, area)
	for i, row := range plots {
		p, tile := row[0], tiles[i][0]
		leg := p.Legend
		p.Legend = plot.NewLegend()
		p.Draw(tile)
		col := tile
		col.Min.X, col.Max.X = c.Max.X-legendWidth+vg.Points(8), c.Max.X
		col.Max.Y -= vg.Points(24)
		leg.Draw(col)
	}
	sty := plot.New().Legend.TextStyle
	sty.Font.Size = vg.Points(10)
	for i, l := range lines {
		y := c.Min.Y + keyH - keyPad - vg.Length(i+1)*keyLine + keyLine/4
		c.FillText(sty, vg.Point{X: c.Min.X + 12, Y: y}, l)
	}
	return nil
}

// sqrtScale places y at its square root.
type sqrtScale struct{}

func (sqrtScale) Normalize(min, max, x float64) float64 {
	lo, hi := math.Sqrt(math.Max(min, 0)), math.Sqrt(math.Max(max, 0))
	if hi <= lo {
		return 0
	}
	return (math.Sqrt(math.Max(x, 0)) - lo) / (hi - lo)
}

// sqrtTicks are 0 and the 1-2-5 values up to max that lie apart on a
// square-root scale.
type sqrtTicks struct{}

func (sqrtTicks) Ticks(min, max float64) []plot.Tick {
	ts := []plot.Tick{{Value: 0, Label: "0"}}
	last, gap := 0.0, 0.1*math.Sqrt(max)
	for mag := 1.0; mag <= max; mag *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := m * mag
			if v > max || math.Sqrt(v)-last < gap {
				continue
			}
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
			last = math.Sqrt(v)
		}
	}
	return ts
}

// plainTicks are the default ticks labelled without trailing zeros.
type plainTicks struct{}

func (plainTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
}

// keyLines explains the markers: each ranked change in one line.
func keyLines(d *Data) []string {
	r := d.Report
	var out []string
	for i, s := range markers(r) {
		by := "actor unknown"
		if s.By != "" {
			by = "by " + s.By
		}
		out = append(out, clip(fmt.Sprintf("#%d  %s  %s  %s  %s: %s -> %s", i+1, s.At.UTC().Format("15:04:05"), by, s.Ref, s.Dimension,
			investigate.ShortID(s.From), investigate.ShortID(s.To))))
	}
	if r.Boundary != nil {
		out = append(out, fmt.Sprintf("bars: observations per %s bucket (records and object states), the bad ones in red; shaded: the incident (first bad to its end), other episodes in orange",
			bucketWidth(d)))
	}
	return out
}

// bucketWidth is a histogram bucket's span, rounded for reading.
func bucketWidth(d *Data) time.Duration {
	if len(d.Buckets) == 0 {
		return 0
	}
	w := d.Buckets[0].End.Sub(d.Buckets[0].Start)
	switch {
	case w >= 10*time.Second:
		return w.Round(time.Second)
	case w >= 10*time.Millisecond:
		return w.Round(time.Millisecond)
	}
	return w
}

// markers are the ranked changes drawn: the first maxMarkers with a time.
func markers(r *investigate.Report) []investigate.Suspect {
	var out []investigate.Suspect
	for _, s := range r.Changes {
		if len(out) == maxMarkers {
			break
		}
		if !s.At.IsZero() {
			out = append(out, s)
		}
	}
	return out
}

// clip makes a string from the data safe to draw, and short enough.
func clip(s string) string {
	s = termsafe.Field(s)
	if r := []rune(s); len(r) > maxLabel {
		s = string(r[:maxLabel-1]) + "…"
	}
	return s
}

func secs(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func newPlot(title string, r *investigate.Report) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.X.Tick.Marker = plot.TimeTicks{Format: "15:04:05"}
	p.X.Label.Text = "time (UTC), " + r.Window.Start.UTC().Format("2006-01-02")
	p.X.Min, p.X.Max = secs(r.Window.Start), secs(r.Window.End)
	if p.X.Max <= p.X.Min {
		p.X.Max = p.X.Min + 1
	}
	p.Y.Tick.Marker = plainTicks{}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	return p
}

// incidentPlot is bad against all per bucket, with the boundary, the
// spans and the markers.
func incidentPlot(d *Data) (*plot.Plot, error) {
	r := d.Report
	title := "Incident timeline"
	if r.Slice != nil {
		title += ": " + clip(investigate.WhereString(r.Slice.Where))
	}
	p := newPlot(title, r)
	// A square-root scale: a few bad among thousands of records still
	// shows, and the ticks keep their true values.
	p.Y.Label.Text = "observations (sqrt scale)"
	ymax := 1.0
	for _, b := range d.Buckets {
		ymax = math.Max(ymax, float64(b.All))
	}
	p.Y.Min, p.Y.Max = 0, ymax*1.3
	p.Y.Scale = sqrtScale{}
	p.Y.Tick.Marker = sqrtTicks{}
	if err := addBars(p, d); err != nil {
		return nil, err
	}
	// The spans after the bars: translucent, they tint the bars they cover.
	if err := addBoundary(p, r, ymax); err != nil {
		return nil, err
	}
	if err := addMarkers(p, r, ymax); err != nil {
		return nil, err
	}
	return p, nil
}

// addBars draws all and bad observations per bucket, as filled steps.
func addBars(p *plot.Plot, d *Data) error {
	if len(d.Buckets) == 0 {
		return nil
	}
	all, bad := steps(d, false), steps(d, true)
	for _, s := range []struct {
		xy   plotter.XYs
		c    color.Color
		name string
	}{{all, colAll, "all observations"}, {bad, colBad, "bad observations"}} {
		l, err := plotter.NewLine(s.xy)
		if err != nil {
			return err
		}
		l.StepStyle = plotter.PostStep
		l.FillColor = s.c
		l.LineStyle.Width = 0
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	return nil
}

// addBoundary draws the incident's span and each later episode's, then the
// last good and first bad instants.
func addBoundary(p *plot.Plot, r *investigate.Report, ymax float64) error {
	b := r.Boundary
	if b == nil {
		return nil
	}
	if err := span(p, b.FirstBad, b.IncidentEnd, p.Y.Max, colIncident); err != nil {
		return err
	}
	for i, e := range r.Episodes {
		if e.Boundary == nil {
			continue
		}
		if err := span(p, e.Boundary.FirstBad, e.Boundary.IncidentEnd, p.Y.Max, colEpisode); err != nil {
			return err
		}
		if err := label(p, e.Boundary.FirstBad, ymax*1.05, fmt.Sprintf("episode %d", i+2)); err != nil {
			return err
		}
	}
	if !b.LastGood.IsZero() {
		if err := vline(p, b.LastGood, p.Y.Max, colGood, "last good "+b.LastGood.UTC().Format("15:04:05.000")); err != nil {
			return err
		}
	}
	return vline(p, b.FirstBad, p.Y.Max, colBad, "first bad "+b.FirstBad.UTC().Format("15:04:05.000"))
}

// addMarkers marks the ranked changes, numbered as in the key below the
// plot.
func addMarkers(p *plot.Plot, r *investigate.Report, ymax float64) error {
	ms := markers(r)
	if len(ms) == 0 {
		return nil
	}
	xy := make(plotter.XYs, len(ms))
	names := make([]string, len(ms))
	for i, s := range ms {
		xy[i] = plotter.XY{X: secs(s.At), Y: ymax * 1.18}
		names[i] = fmt.Sprintf("#%d", i+1)
	}
	sc, err := plotter.NewScatter(xy)
	if err != nil {
		return err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: colChange, Radius: vg.Points(4), Shape: draw.TriangleGlyph{}}
	p.Add(sc)
	p.Legend.Add("ranked change (key below)", sc)
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: names})
	if err != nil {
		return err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Color = colChange
		lb.TextStyle[i].Font.Size = vg.Points(9)
	}
	lb.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(-3)}
	p.Add(lb)
	return nil
}

// steps returns a bucket series as step points, closed at the last end.
func steps(d *Data, bad bool) plotter.XYs {
	xy := make(plotter.XYs, 0, len(d.Buckets)+1)
	v := func(i int) float64 {
		if bad {
			return float64(d.Buckets[i].Bad)
		}
		return float64(d.Buckets[i].All)
	}
	for i, b := range d.Buckets {
		xy = append(xy, plotter.XY{X: secs(b.Start), Y: v(i)})
	}
	last := len(d.Buckets) - 1
	return append(xy, plotter.XY{X: secs(d.Buckets[last].End), Y: v(last)})
}

// loadPlot is the offending class's rate per second, with the peak its
// simulated fix would leave over the burst.
func loadPlot(d *Data) (*plot.Plot, error) {
	l := d.Load
	p := newPlot("API requests per second: "+clip(l.Class), d.Report)
	p.Y.Label.Text = "requests/s"
	p.Y.Min = 0
	xy := plotter.XYs{}
	prev := int64(math.MinInt64)
	for _, s := range l.Rate {
		if prev != math.MinInt64 && s.Sec > prev+1 {
			// seconds without a request are zero
			xy = append(xy, plotter.XY{X: float64(prev + 1), Y: 0}, plotter.XY{X: float64(s.Sec), Y: 0})
		}
		xy = append(xy, plotter.XY{X: float64(s.Sec), Y: float64(s.Count)})
		prev = s.Sec
	}
	ymax := math.Max(1, l.PeakRps)
	for _, v := range xy {
		ymax = math.Max(ymax, v.Y)
	}
	p.Y.Max = ymax * 1.15
	if len(xy) > 0 {
		ln, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		ln.LineStyle.Color = colRate
		ln.LineStyle.Width = vg.Points(1.2)
		p.Add(ln)
		p.Legend.Add("recorded", ln)
	}
	if f := l.Fix; f != nil {
		fx, err := plotter.NewLine(plotter.XYs{{X: secs(l.Start), Y: f.SimulatedPeakRps}, {X: secs(l.End) + 1, Y: f.SimulatedPeakRps}})
		if err != nil {
			return nil, err
		}
		fx.LineStyle.Color = colFix
		fx.LineStyle.Width = vg.Points(2)
		fx.LineStyle.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(fx)
		p.Legend.Add(fmt.Sprintf("peak with the %s fix (simulated): %.0f/s, was %.0f/s", clip(f.Kind), f.SimulatedPeakRps, l.PeakRps), fx)
	}
	return p, nil
}

// span shades [from, to) over the whole height.
func span(p *plot.Plot, from, to time.Time, h float64, c color.Color) error {
	if to.Before(from) || to.Equal(from) {
		to = from.Add(time.Second)
	}
	x0, x1 := secs(from), secs(to)
	pg, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: h}, {X: x0, Y: h}})
	if err != nil {
		return err
	}
	pg.Color = c
	pg.LineStyle.Width = 0
	p.Add(pg)
	return nil
}

// vline draws a dashed vertical line at t, labelled at the top.
func vline(p *plot.Plot, t time.Time, h float64, c color.Color, text string) error {
	x := secs(t)
	l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: h}})
	if err != nil {
		return err
	}
	l.LineStyle.Color = c
	l.LineStyle.Width = vg.Points(1.5)
	l.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	p.Add(l)
	p.Legend.Add(text, l)
	return nil
}

// label writes text at (t, y).
func label(p *plot.Plot, t time.Time, y float64, text string) error {
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: secs(t), Y: y}}, Labels: []string{text}})
	if err != nil {
		return err
	}
	lb.TextStyle[0].Color = color.NRGBA{R: 160, G: 80, B: 0, A: 255}
	lb.TextStyle[0].Font.Size = vg.Points(9)
	p.Add(lb)
	return nil
}
