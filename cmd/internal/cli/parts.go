package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/internal/termsafe"
)

// The commands that run one part of the investigation: bisect (the
// boundary), diff (the suspects across it), slice (timeline mode) and
// counterexample. Each runs the same analyzers as investigate and prints
// its part; -o json prints that part of investigate's JSON contract.

func init() {
	autoBisect = runAutoBisect
	sliceTimeline = runSliceTimeline
	sliceTimelineFlags = func(cmd *cobra.Command) {
		// --bad and -o are shared with the cube mode.
		cmd.Flags().String("good", "", "timeline mode: CEL over record fields, what counts as good")
		cmd.Flags().String("since", "", "timeline mode: look at evidence from this instant (RFC 3339, or a duration back from now: 2h, 1d)")
		cmd.Flags().String("until", "", "timeline mode: look at evidence before this instant")
		cmd.Flags().Bool("since-data", false, "timeline mode: count --since and --until durations back from the end of the data instead of from now")
		(&scopeFlags{}).add(cmd.Flags(), "timeline mode: judge units")
		cmd.Flags().String("rules", "", "timeline mode: YAML file of artifact extraction rules")
	}
}

// flagsOf returns the investigation flags registered on cmd.
func flagsOf(cmd *cobra.Command) *investigateFlags {
	fl := &investigateFlags{output: "text"}
	get := func(name string) string {
		if f := cmd.Flags().Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	fl.bad, fl.good, fl.since, fl.until, fl.rules = get("bad"), get("good"), get("since"), get("until"), get("rules")
	if o := get("output"); o != "" {
		fl.output = o
	}
	fl.sinceData = get("since-data") == "true"
	fl.scope = scopeFlags{namespace: get("namespace"), all: get("all-namespaces") == "true"}
	return fl
}

func runAutoBisect(cmd *cobra.Command, f *Factory) error {
	fl := flagsOf(cmd)
	rep, err := fl.run(cmd.Context(), f)
	if err != nil {
		return err
	}
	if structured(fl.output) {
		return writeData(f.IO.Out, fl.output, struct {
			SchemaVersion int                   `json:"schemaVersion"`
			Boundary      *investigate.Boundary `json:"boundary"`
		}{rep.SchemaVersion, rep.Boundary})
	}
	b := rep.Boundary
	if b == nil {
		termsafe.Fprintf(f.IO.Out, "Nothing bad in the evidence (bad = %s).\n", rep.Bad)
		return nil
	}
	ew := &errWriter{w: f.IO.Out}
	ew.printf("last known-good  %s\nearliest bad     %s\n", ts(b.LastGood), ts(b.FirstBad))
	ew.printf("the bad rate rises from %.3g/s to %.3g/s there (log-likelihood ratio %.1f); %d bad observation(s) before it are baseline noise\n\n",
		b.BaselineRate, b.IncidentRate, b.Score, b.Noise)
	tw := tabwriter.NewWriter(f.IO.Out, 0, 8, 2, ' ', 0)
	f.header(tw, "SIDE\tTIME\tOBJECT\tWHAT\tEVIDENCE")
	for _, e := range b.Evidence {
		termsafe.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Side, ts(e.Time), e.Ref, e.What, investigate.EvidenceLink(e.Record, e.Run, e.Line))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ew.printf("\nMark instants yourself with faultline bisect start|good|bad; see what changed with faultline diff.\n")
	return ew.err
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
		return writeData(f.IO.Out, fl.output, struct {
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
		investigate.WhereString(s.Where), s.Bad, s.Total, s.Precision, 100*s.Coverage, rep.Units.Bad)
	for _, o := range s.Others {
		ew.printf("%s\n  %g of %g units bad (precision %.2f), covering %.0f%%\n", o.Where.String(), o.Bad, o.Total, o.Precision, 100*o.Coverage)
	}
	return ew.err
}

func newDiffCmd(f *Factory) *cobra.Command {
	fl := &investigateFlags{}
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Every change of identity across the boundary, ranked as suspects",
		Long: `Find the boundary (as faultline bisect does) and list the changes of
identity that could explain the bad slice: changes in time of the objects the
bad units ran on (ConfigMap and Secret keys, node labels and driver, owner
generations and template images, objects created), and differences between
the bad slice and its known-good counterexample (an image digest pulled anew).
Each with from, to, when, its evidence, and one line of reasoning: before the
first bad? held by the bad slice? absent from the counterexample?

For the identity of one unit at two instants, see faultline identity diff.

` + badHelp,
		Example: `  faultline diff
  faultline diff -o json | jq '.changes[0]'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := fl.run(cmd.Context(), f)
			if err != nil {
				return err
			}
			if structured(fl.output) {
				return writeData(f.IO.Out, fl.output, struct {
					Boundary *investigate.Boundary `json:"boundary"`
					Changes  []investigate.Suspect `json:"changes"`
				}{rep.Boundary, rep.Changes})
			}
			if rep.Boundary == nil {
				termsafe.Fprintf(f.IO.Out, "Nothing bad in the evidence (bad = %s).\n", rep.Bad)
				return nil
			}
			ew := &errWriter{w: f.IO.Out}
			ew.printf("last known-good %s, earliest bad %s\n\n", ts(rep.Boundary.LastGood), ts(rep.Boundary.FirstBad))
			if len(rep.Changes) == 0 {
				ew.printf("No change of identity found before the first bad.\n")
			}
			for _, c := range rep.Changes {
				ew.printf("%d. %s  %s\n   %s -> %s  at %s (%s, %s)\n   %s\n   %s\n", c.Rank, c.Ref, c.Dimension, c.From, c.To, ts(c.At), c.Kind,
					investigate.EvidenceLink(0, c.Run, c.Line), c.Why, investigate.Actor(c))
			}
			return ew.err
		},
	}
	fl.add(cmd, "text, json or yaml")
	return cmd
}

func newCounterexampleCmd(f *Factory) *cobra.Command {
	fl := &investigateFlags{}
	cmd := &cobra.Command{
		Use:   "counterexample",
		Short: "A known-good unit most like the bad slice, and how it differs",
		Long: `Find the bad slice (as faultline slice does) and the unit that matches the
bad units in as many identity dimensions as possible yet stayed good, with
the dimensions in which it differs: the prediction that confirms (or refutes)
the root cause. When the good unit matches the whole slice, identity alone
does not explain the failure. When no good unit exists, it says so.

` + badHelp,
		Example: `  faultline counterexample
  faultline counterexample -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := fl.run(cmd.Context(), f)
			if err != nil {
				return err
			}
			if structured(fl.output) {
				return writeData(f.IO.Out, fl.output, struct {
					Slice          *investigate.Slice          `json:"slice"`
					Counterexample *investigate.Counterexample `json:"counterexample"`
				}{rep.Slice, rep.Counterexample})
			}
			ce := rep.Counterexample
			switch {
			case rep.Slice == nil:
				fmt.Fprintln(f.IO.Out, "No bad slice, so no counterexample.")
				return nil
			case ce == nil:
				termsafe.Fprintf(f.IO.Out, "No known-good unit in the evidence resembles the slice %s.\n", investigate.WhereString(rep.Slice.Where))
				return nil
			}
			ew := &errWriter{w: f.IO.Out}
			ew.printf("%s stayed good; bad slice %s\n", ce.Ref, investigate.WhereString(rep.Slice.Where))
			if ce.InSlice {
				ew.printf("It matches the whole slice: identity alone does not explain the failure.\n")
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 8, 2, ' ', 0)
			f.header(tw, "DIMENSION\tBAD\tGOOD")
			for _, d := range ce.Differs {
				termsafe.Fprintf(tw, "%s\t%s\t%s\n", d.Dimension, dash(d.Bad), dash(d.Good))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, c := range rep.Confirmation {
				ew.printf("\n%s\n", c)
			}
			return ew.err
		},
	}
	fl.add(cmd, "text, json or yaml")
	addNoHeaders(cmd, f)
	return cmd
}
