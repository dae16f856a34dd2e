package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/docs"
)

func newExplainCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "explain [TERM]",
		Short: "Explain a word of the reports: slice, unit, coverage, confidence...",
		Long: `Explain a word faultline's reports use, in plain terms, and how faultline
computes it. Without TERM, list the terms. The same text is docs/glossary.md.`,
		Example: `  faultline explain
  faultline explain slice
  faultline explain "first bad"
  faultline explain fix-apf`,
		Args: cobra.ArbitraryArgs,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, t := range docs.Glossary() {
				out = append(out, t.Name)
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return listTerms(f)
			}
			// "first bad" may come as two words.
			name := strings.Join(args, " ")
			t, ok := docs.Lookup(name)
			if !ok {
				return usagef("faultline explain slice", "unknown term %q: want one of %s", name, strings.Join(termNames(), ", "))
			}
			title := t.Name
			if len(t.Aliases) > 0 {
				title += " (also: " + strings.Join(t.Aliases, ", ") + ")"
			}
			fmt.Fprintf(f.IO.Out, "%s\n\n%s\n\nAll terms: faultline explain; the glossary: docs/glossary.md\n", strings.ToUpper(title[:1])+title[1:], t.Text)
			return nil
		},
	}
}

func termNames() []string {
	var names []string
	for _, t := range docs.Glossary() {
		names = append(names, t.Name)
	}
	return names
}

func listTerms(f *Factory) error {
	fmt.Fprintln(f.IO.Out, "Terms (faultline explain TERM):")
	for _, t := range docs.Glossary() {
		line := "  " + t.Name
		if len(t.Aliases) > 0 {
			line += "  (" + strings.Join(t.Aliases, ", ") + ")"
		}
		fmt.Fprintln(f.IO.Out, line)
	}
	return nil
}
