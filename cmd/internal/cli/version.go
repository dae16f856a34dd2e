package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what faultline version prints: the stable contract of
// -o json and -o yaml.
type versionInfo struct {
	Version   string `json:"version"`             // the release (-ldflags -X), else the module version
	Module    string `json:"module,omitempty"`    // the main module's path
	Revision  string `json:"revision,omitempty"`  // the VCS commit built
	Time      string `json:"time,omitempty"`      // the commit's time, RFC 3339
	Modified  bool   `json:"modified"`            // built from a tree with uncommitted changes
	GoVersion string `json:"goVersion,omitempty"` // the toolchain that built it
}

// buildInfo reads the version from the binary: the module version and the
// VCS stamps the go command records (debug.ReadBuildInfo).
func buildInfo(release string, read func() (*debug.BuildInfo, bool)) versionInfo {
	v := versionInfo{Version: release}
	bi, ok := read()
	if !ok {
		return v
	}
	v.Module, v.GoVersion = bi.Main.Path, bi.GoVersion
	if (v.Version == "" || v.Version == "dev") && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func newVersionCmd(f *Factory) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit it was built from and the Go version",
		Long: `Print faultline's version: the release (or the module version when built
with go install), the VCS commit and its time, whether the tree had
uncommitted changes, and the Go toolchain. A binary built outside a git
checkout (go build -buildvcs=false, or a plain go run) has no commit.`,
		Example: `  faultline version
  faultline version -o json | jq -r .revision`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "text", "json", "yaml"); err != nil {
				return err
			}
			v := buildInfo(f.Version, debug.ReadBuildInfo)
			if structured(output) {
				return f.writeData(output, v)
			}
			rev := v.Revision
			if rev == "" {
				rev = "unknown (built without VCS stamps)"
			} else if v.Modified {
				rev += " (modified)"
			}
			fmt.Fprintf(f.IO.Out, "faultline  %s\ncommit     %s\n", v.Version, rev)
			if v.Time != "" {
				fmt.Fprintf(f.IO.Out, "time       %s\n", v.Time)
			}
			fmt.Fprintf(f.IO.Out, "go         %s\n", v.GoVersion)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or yaml")
	return cmd
}
