package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/faultline/faultline/fixtures"
	"github.com/faultline/faultline/internal/termsafe"
)

func writeEval(f *Factory, output string, res *fixtures.EvalResult) error {
	if structured(output) {
		return f.writeData(output, res)
	}
	return writeEvalTable(f.IO.Out, res)
}

// writeEvalTable prints a line per incident with each check (pass, FAIL,
// or - when the truth gives it nothing to judge), the score per family,
// the controls, the overall score and the incidents not scored.
func writeEvalTable(w io.Writer, res *fixtures.EvalResult) error {
	var checks []string // the checks some incident has, in eval's order
	for _, c := range fixtures.CheckNames {
		if slices.ContainsFunc(res.Incidents, func(in fixtures.IncidentResult) bool { _, ok := in.Checks[c]; return ok }) {
			checks = append(checks, c)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "INCIDENT\tFAMILY\tSEED\tSPLIT\t%s\n", strings.ToUpper(strings.Join(checks, "\t"))) // check names are ours
	for _, in := range res.Incidents {
		cells := make([]string, len(checks))
		for i, c := range checks {
			cells[i] = "-"
			if ok, judged := in.Checks[c]; judged {
				cells[i] = map[bool]string{true: fixtures.StatusPass, false: fixtures.StatusFail}[ok]
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", termsafe.Field(in.Path), termsafe.Field(in.Family), in.Seed, termsafe.Field(in.Split), strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(tw, "FAMILY\tCHECKS\tPASSED\tSCORE")
	for _, fam := range res.Families {
		termsafe.Fprintf(tw, "%s\t%d\t%d\t%.3f\n", fam.Family, fam.Checks, fam.Passed, fam.Score)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nControls: %d incidents, %d confident causes\n", res.Controls.Incidents, res.Controls.ConfidentCauses)
	fmt.Fprintf(w, "Overall: %d of %d checks passed, score %.3f\n", res.Overall.Passed, res.Overall.Checks, res.Overall.Score)
	for _, e := range res.Errors {
		termsafe.Fprintf(w, "NOT SCORED %s: %s\n", e.Path, e.Error)
	}
	return nil
}
