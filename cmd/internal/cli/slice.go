package cli

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/analyze/slice"
	"github.com/faultline/faultline/internal/termsafe"
)

// sliceCubeOptions holds the flags of the cube mode.
type sliceCubeOptions struct {
	f      *Factory
	cube   string
	output string

	value, baseline  string
	timeCol          string
	bad, total       string
	at               string
	history          int
	maxCauses, layer int
}

const sliceCubeHint = "faultline slice --cube case.csv --value real --baseline predict"

func newSliceCmd(f *Factory) *cobra.Command {
	opts := &sliceCubeOptions{f: f}
	cmd := &cobra.Command{
		Use:   "slice",
		Short: "Find the smallest slice of the fleet (or of a cube) that explains an anomaly",
		Long: `Find the fewest, most general conjunctions of dimension=value (such as
image.digest=sha256:ab & node.pool=gpu) that explain an anomaly. Every
conjunction of up to --max-layer dimensions is scored by how much more
likely its numbers are if it is abnormal than if nothing is wrong, less
the cost of naming it; the best is generalized while its siblings are hit
too, removed, and the search repeats for further causes. Scattered noise
does not become a cause. See docs/slice.md.

Timeline mode (no --cube): the units of an incident in the timeline DB
(pods, jobs, nodes, with their identity dimensions) are the leaves, --bad
marks the failed ones, and the healthy units are the baseline.

Cube mode (--cube FILE.csv, or - for stdin; gzip is detected): a plain cube
with a header row; the measure columns are named by flags and every other
column is a dimension. Two public benchmark layouts are understood:

  Squeeze / RiskLoc   one row per leaf, an observed and a forecast amount:
                      --value real --baseline predict
  RobustSpot          one row per leaf per minute, failures and totals:
                      --time-column min --bad value --total cnt --at UNIX_SECONDS
                      the minute --at is compared with the minutes before it
                      (--history N: only the last N of them)

With --bad and --total and no --time-column, each row is a leaf of bad
events out of total events, and the leaves outside a slice are its baseline.

-o table prints one line per cause (conjunction, counts, coverage: the share
of the anomaly inside it, precision: the share of it that is abnormal, and
score: its evidence in nats) and a summary on stderr. -o json prints
{"causes":[{"dimension":"value",...},...],"stats":[...],...}.`,
		Example: `  # Timeline mode: of the units (pods, jobs, nodes) of the incident in --db,
  # an expression marks the bad ones; which slice of the fleet holds them?
  faultline slice --bad 'EXPR'

  # Squeeze / RiskLoc cube: observed (real) against forecast (predict) per leaf
  faultline slice --cube 1451019300.csv --value real --baseline predict

  # RobustSpot cube: failures (value) out of requests (cnt) per minute (min);
  # the minute 1566397800 against the 30 minutes before it, as JSON
  faultline slice --cube case1.csv.gz --time-column min --bad value --total cnt \
    --at 1566397800 --history 30 -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.cube == "" {
				return runSliceTimeline(cmd, f)
			}
			return runSliceCube(cmd.Context(), opts, cmd)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.cube, "cube", "", "cube mode: CSV file with a header row (- for stdin, gzip detected)")
	fl.StringVar(&opts.value, "value", "", "cube mode: column of observed amounts (Squeeze: real)")
	fl.StringVar(&opts.baseline, "baseline", "", "cube mode: column of forecast amounts (Squeeze: predict)")
	fl.StringVar(&opts.bad, "bad", "", "cube mode: column of failures (RobustSpot: value); timeline mode: expression marking a unit bad")
	fl.StringVar(&opts.total, "total", "", "cube mode: column of totals (RobustSpot: cnt)")
	fl.StringVar(&opts.timeCol, "time-column", "", "cube mode: integer time column (RobustSpot: min); needs --at")
	fl.StringVar(&opts.at, "at", "", "cube mode: the time step under investigation, in the unit of --time-column (RobustSpot: Unix seconds)")
	fl.IntVar(&opts.history, "history", 0, "cube mode: time steps before --at that form the baseline (0: all)")
	fl.IntVar(&opts.maxCauses, "max-causes", 0, "most causes to report (0: 16)")
	fl.IntVar(&opts.layer, "max-layer", 0, "most dimensions in one conjunction (0: 3)")
	fl.StringVarP(&opts.output, "output", "o", "table", "output format: table, json or yaml")
	addSliceTimelineFlags(cmd)
	return cmd
}

// csvOptions checks the measure flags of the cube mode and turns them into
// the loader's options.
func (o *sliceCubeOptions) csvOptions(cmd *cobra.Command) (slice.CSVOptions, error) {
	opt := slice.CSVOptions{
		Value: o.value, Baseline: o.baseline,
		Time: o.timeCol, Bad: o.bad, Total: o.total,
		History: o.history,
	}
	volume := o.value != "" || o.baseline != ""
	ratio := o.bad != "" || o.total != ""
	switch {
	case volume && ratio:
		return opt, usagef(sliceCubeHint, "--value/--baseline (observed against forecast) exclude --bad/--total (failures out of totals)")
	case volume && (o.value == "" || o.baseline == ""):
		return opt, usagef(sliceCubeHint, "--value and --baseline go together: the observed and the forecast column")
	case volume && o.timeCol != "":
		return opt, usagef(sliceCubeHint, "--time-column works with --bad and --total, not with --value/--baseline")
	case ratio && (o.bad == "" || o.total == ""):
		return opt, usagef("faultline slice --cube case.csv --bad value --total cnt", "--bad and --total go together: the failures and the totals column")
	case !volume && !ratio:
		return opt, usagef(sliceCubeHint, "name the measure columns: --value and --baseline, or --bad and --total")
	}
	rsHint := "faultline slice --cube case.csv --time-column min --bad value --total cnt --at 1566397800"
	switch {
	case o.at != "" && o.timeCol == "":
		return opt, usagef(rsHint, "--at needs --time-column: the column the time steps are in")
	case o.timeCol != "" && o.at == "":
		return opt, usagef(rsHint, "--time-column needs --at: the time step to investigate")
	case cmd.Flags().Changed("history") && o.timeCol == "":
		return opt, usagef(rsHint, "--history needs --time-column and --at")
	case o.history < 0:
		return opt, usagef(rsHint+" --history 30", "invalid --history %d: want a number of time steps >= 0", o.history)
	}
	if o.at != "" {
		at, err := strconv.ParseInt(o.at, 10, 64)
		if err != nil {
			return opt, usagef(rsHint, "invalid --at %q: want an integer in the unit of --time-column %s", o.at, o.timeCol)
		}
		opt.At = at
	}
	return opt, nil
}

func runSliceCube(ctx context.Context, o *sliceCubeOptions, cmd *cobra.Command) error {
	if err := checkOutput(o.output, "table", "json", "yaml"); err != nil {
		return err
	}
	if o.maxCauses < 0 {
		return usagef(sliceCubeHint+" --max-causes 3", "invalid --max-causes %d: want a number >= 0 (0: 16)", o.maxCauses)
	}
	if o.layer < 0 {
		return usagef(sliceCubeHint+" --max-layer 2", "invalid --max-layer %d: want a number >= 0 (0: 3)", o.layer)
	}
	copt, err := o.csvOptions(cmd)
	if err != nil {
		return err
	}
	r, name, closeFn, err := openCube(o.cube, o.f.IO.In)
	if err != nil {
		return err
	}
	defer closeFn()
	c, err := slice.LoadCSV(r, name, copt)
	if err != nil {
		return err
	}
	res, err := slice.Search(ctx, c, slice.Options{MaxLayer: o.layer, MaxCauses: o.maxCauses})
	if err != nil {
		return err
	}
	if structured(o.output) {
		return o.f.writeData(o.output, newSliceJSON(c, res))
	}
	return printSlice(o.f.IO.Out, o.f.IO.ErrOut, c, res)
}

// openCube opens a cube file, or stdin for "-", decompressing gzip found by
// its magic bytes. name is what error messages call it.
func openCube(path string, stdin io.Reader) (r io.Reader, name string, closeFn func(), err error) {
	name, closeFn = path, func() {}
	src := stdin
	if path == "-" {
		name = "<stdin>"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, "", nil, err
		}
		src, closeFn = f, func() { f.Close() }
	}
	br := bufio.NewReaderSize(src, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			closeFn()
			return nil, "", nil, fmt.Errorf("%s: %w", name, err)
		}
		return zr, name, closeFn, nil
	}
	return br, name, closeFn, nil
}

// sliceJSON is the -o json contract: causes is a list of conjunctions
// (dimension -> value); stats holds the numbers of each, in the same order.
// Derived ratios are rounded to 6 decimals so output is stable across
// platforms.
type sliceJSON struct {
	Causes     []slice.Element  `json:"causes"`
	Stats      []sliceCauseJSON `json:"stats"`
	Measure    string           `json:"measure"`
	Dimensions []string         `json:"dimensions"`
	Leaves     int              `json:"leaves"`
	Bad        float64          `json:"bad"`
	Total      float64          `json:"total,omitempty"`
	Expected   float64          `json:"expected,omitempty"`
	Coverage   float64          `json:"coverage"`
	Dispersion float64          `json:"dispersion"`
}

type sliceCauseJSON struct {
	Cause     string  `json:"cause"`
	Bad       float64 `json:"bad"`
	Total     float64 `json:"total,omitempty"`
	Expected  float64 `json:"expected,omitempty"`
	Coverage  float64 `json:"coverage"`
	Precision float64 `json:"precision"`
	Score     float64 `json:"score"`
}

func newSliceJSON(c *slice.Cube, res slice.Result) sliceJSON {
	out := sliceJSON{
		Causes:     []slice.Element{},
		Stats:      []sliceCauseJSON{},
		Measure:    c.Measure.String(),
		Dimensions: c.Dims,
		Leaves:     len(c.Leaves),
		Bad:        res.Bad,
		Total:      res.Total,
		Expected:   round6(res.Expected),
		Coverage:   round6(res.Coverage),
		Dispersion: round6(res.Dispersion),
	}
	if out.Dimensions == nil {
		out.Dimensions = []string{}
	}
	for _, k := range res.Causes {
		out.Causes = append(out.Causes, k.Where)
		out.Stats = append(out.Stats, sliceCauseJSON{
			Cause:     sliceText(k.Where),
			Bad:       k.Bad,
			Total:     k.Total,
			Expected:  round6(k.Expected),
			Coverage:  round6(k.Coverage),
			Precision: round6(k.Precision),
			Score:     round6(k.Score),
		})
	}
	return out
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// printSlice writes one line per cause on out and the summary on errOut.
func printSlice(out, errOut io.Writer, c *slice.Cube, res slice.Result) error {
	shape := fmt.Sprintf("%d leaves, %d dimensions, dispersion %.2f", len(c.Leaves), len(c.Dims), res.Dispersion)
	var anomaly string
	switch {
	case c.Measure == slice.Volume:
		anomaly = fmt.Sprintf("the deviation of %s observed from %s forecast", fmtNum(res.Bad), fmtNum(res.Expected))
	case c.Baseline:
		anomaly = fmt.Sprintf("%s bad events out of %s (%s expected)", fmtNum(res.Bad), fmtNum(res.Total), fmtNum(res.Expected))
	default:
		anomaly = fmt.Sprintf("%s bad events out of %s", fmtNum(res.Bad), fmtNum(res.Total))
	}
	if len(res.Causes) == 0 {
		termsafe.Fprintf(errOut, "No cause found: %s is within the noise; %s.\n", anomaly, shape)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	switch {
	case c.Measure == slice.Volume:
		fmt.Fprint(tw, "CAUSE\tOBSERVED\tFORECAST\t")
	case c.Baseline:
		fmt.Fprint(tw, "CAUSE\tBAD\tTOTAL\tEXPECTED\t")
	default:
		fmt.Fprint(tw, "CAUSE\tBAD\tTOTAL\t")
	}
	fmt.Fprintln(tw, "COVERAGE\tPRECISION\tSCORE")
	for _, k := range res.Causes {
		switch {
		case c.Measure == slice.Volume:
			termsafe.Fprintf(tw, "%s\t%s\t%s\t", k.Where, fmtNum(k.Bad), fmtNum(k.Expected))
		case c.Baseline:
			termsafe.Fprintf(tw, "%s\t%s\t%s\t%s\t", k.Where, fmtNum(k.Bad), fmtNum(k.Total), fmtNum(k.Expected))
		default:
			termsafe.Fprintf(tw, "%s\t%s\t%s\t", k.Where, fmtNum(k.Bad), fmtNum(k.Total))
		}
		fmt.Fprintf(tw, "%.1f%%\t%.1f%%\t%.1f\n", 100*k.Coverage, 100*k.Precision, k.Score)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	noun := "causes cover"
	if len(res.Causes) == 1 {
		noun = "cause covers"
	}
	termsafe.Fprintf(errOut, "%d %s %.1f%% of %s; %s.\n", len(res.Causes), noun, 100*res.Coverage, anomaly, shape)
	return nil
}

// fmtNum prints counts without decimals and amounts with two.
func fmtNum(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// addSliceTimelineFlags adds the flags only slice's timeline mode reads;
// --bad and -o are shared with the cube mode.
func addSliceTimelineFlags(cmd *cobra.Command) {
	cmd.Flags().String("good", "", "timeline mode: CEL over record fields, what counts as good")
	cmd.Flags().String("since", "", "timeline mode: look at evidence from this instant (RFC 3339, or a duration back from now: 2h, 1d)")
	cmd.Flags().String("until", "", "timeline mode: look at evidence before this instant")
	cmd.Flags().Bool("since-data", false, "timeline mode: count --since and --until durations back from the end of the data instead of from now")
	(&scopeFlags{}).add(cmd.Flags(), "timeline mode: judge units")
	cmd.Flags().String("rules", "", "timeline mode: YAML file of artifact extraction rules")
}

func runSliceTimeline(cmd *cobra.Command, f *Factory) error {
	fl := flagsOf(cmd)
	rep, err := fl.run(cmd.Context(), f)
	if err != nil {
		return err
	}
	if structured(fl.output) {
		causes := []map[string]string{}
		if rep.Slice != nil {
			causes = append(causes, rep.Slice.Where)
			for _, o := range rep.Slice.Others {
				causes = append(causes, o.Where)
			}
		}
		return f.writeData(fl.output, struct {
			Causes []map[string]string `json:"causes"`
			Slice  *investigate.Slice  `json:"slice"`
		}{causes, rep.Slice})
	}
	if rep.Slice == nil {
		fmt.Fprintf(f.IO.Out, "No slice: %d bad and %d good units after the boundary.\n", rep.Units.Bad, rep.Units.Good)
		return nil
	}
	s := rep.Slice
	ew := &errWriter{w: f.IO.Out}
	ew.printf("%s\n  %d of %d units bad (precision %.2f), covering %.0f%% of the %d bad units\n",
		sliceText(s.Where), s.Bad, s.Total, s.Precision, 100*s.Coverage, rep.Units.Bad)
	for _, o := range s.Others {
		ew.printf("%s\n  %g of %g units bad (precision %.2f), covering %.0f%%\n", sliceText(o.Where), o.Bad, o.Total, o.Precision, 100*o.Coverage)
	}
	return ew.err
}
