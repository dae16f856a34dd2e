// faultline counterexample: the known-good unit most like the bad slice;
// -o json prints that part of investigate's JSON contract.

package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/internal/termsafe"
)

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
				return f.writeData(fl.output, struct {
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
				termsafe.Fprintf(f.IO.Out, "No known-good unit in the evidence resembles the slice %s.\n", sliceText(rep.Slice.Where))
				return nil
			}
			ew := &errWriter{w: f.IO.Out}
			ew.printf("%s stayed good; bad slice %s\n", ce.Ref, sliceText(rep.Slice.Where))
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
