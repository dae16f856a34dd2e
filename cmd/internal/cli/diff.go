// faultline diff: the changes of identity across the boundary, ranked as
// suspects; -o json prints that part of investigate's JSON contract.

package cli

import (
	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/internal/termsafe"
)

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
				return f.writeData(fl.output, struct {
					Boundary *investigate.Boundary `json:"boundary"`
					Changes  []investigate.Suspect `json:"changes"`
				}{rep.Boundary, rep.Changes})
			}
			if rep.Boundary == nil {
				termsafe.Fprintf(f.IO.Out, "Nothing bad in the evidence (bad = %s).\n", rep.Bad)
				return nil
			}
			ew := &errWriter{w: f.IO.Out}
			ew.printf("last known-good %s, earliest bad %s\n\n", fmtTime(rep.Boundary.LastGood, rfc3339Milli), fmtTime(rep.Boundary.FirstBad, rfc3339Milli))
			if len(rep.Changes) == 0 {
				ew.printf("No change of identity found before the first bad.\n")
			}
			for _, c := range rep.Changes {
				ew.printf("%d. %s  %s\n   %s -> %s  at %s (%s, %s)\n   %s\n   %s\n", c.Rank, c.Ref, c.Dimension, c.From, c.To, fmtTime(c.At, rfc3339Milli), c.Kind,
					investigate.EvidenceLink(0, c.Run, c.Line), c.Why, investigate.Actor(c))
			}
			return ew.err
		},
	}
	fl.add(cmd, "text, json or yaml")
	return cmd
}
