package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/internal/incidentplot"
)

const plotHelp = "write a timeline plot of the incident to `FILE` (.svg or .png): bad against all\n" +
	"observations per time bucket, the last-good and first-bad lines, the incident and\n" +
	"its episodes shaded, each ranked change as a numbered marker (keyed below\n" +
	"the plot with its actor), and, when the cause is a burst of API requests,\n" +
	"that request class's rate per second beside the peak its simulated fix would\n" +
	"leave. With -o markdown the postmortem links it (by its path from the current\n" +
	"directory: write the Markdown there)"

// checkPlotPath refuses a --plot file whose format is not known.
func checkPlotPath(path string) error {
	if path == "" {
		return nil
	}
	if _, ok := incidentplot.Format(path); !ok {
		return usagef("faultline investigate --plot incident.svg -o markdown > postmortem.md",
			"--plot %q: want a .svg or .png file", path)
	}
	return nil
}

// writePlot draws the report's timeline to path, and returns how the
// Markdown beside it should link it.
func writePlot(ctx context.Context, f *Factory, rep *investigate.Report, good, path string) (link string, err error) {
	store, err := f.OpenStoreReadOnly(ctx)
	if err != nil {
		return "", err
	}
	defer store.Close()
	if err := incidentplot.WriteFile(ctx, store, rep, incidentplot.Options{Good: good}, path); err != nil {
		return "", err
	}
	fmt.Fprintf(f.IO.ErrOut, "wrote the timeline plot to %s\n", path)
	return plotLink(path), nil
}

// plotLink is path relative to the current directory when it lies below
// it, else path itself.
func plotLink(path string) string {
	if !filepath.IsAbs(path) {
		return path
	}
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}
