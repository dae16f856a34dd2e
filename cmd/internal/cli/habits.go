package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

// The habits kubectl users bring, in one place: -n/-A, -o json|yaml,
// --no-headers, and --since counted back from now.

// ---- -n/--namespace and -A/--all-namespaces ----

// scopeFlags narrow an analysis to one namespace. The default, like
// today, is every namespace; -A says so explicitly and wins over -n, as in
// kubectl.
type scopeFlags struct {
	namespace string
	all       bool
}

// add registers -n and -A; what says what they narrow, for --help.
func (s *scopeFlags) add(fs *pflag.FlagSet, what string) {
	fs.StringVarP(&s.namespace, "namespace", "n", "", "only "+what+" in this namespace (default: all namespaces)")
	fs.BoolVarP(&s.all, "all-namespaces", "A", false, "all namespaces (the default; overrides -n)")
}

// cel is the CEL condition that keeps the records of the namespace, or ""
// for all of them.
func (s scopeFlags) cel() string {
	if s.all || s.namespace == "" {
		return ""
	}
	return "ns == " + strconv.Quote(s.namespace)
}

// keeps reports whether an object of namespace ns is in scope; a
// cluster-scoped object (ns "", a node) serves every namespace and stays.
func (s scopeFlags) keeps(ns string) bool {
	return s.all || s.namespace == "" || ns == "" || ns == s.namespace
}

// versions keeps the versions of objects in scope (see keeps).
func (s scopeFlags) versions(vs []timeline.ObjectVersion) []timeline.ObjectVersion {
	return slices.DeleteFunc(slices.Clone(vs), func(v timeline.ObjectVersion) bool { return !s.keeps(v.Object.Namespace) })
}

// observations keeps the observations of objects in scope (see keeps).
func (s scopeFlags) observations(os []outcome.Observation) []outcome.Observation {
	return slices.DeleteFunc(slices.Clone(os), func(o outcome.Observation) bool { return !s.keeps(o.Object.Namespace) })
}

// scopedKeepingCluster narrows expr to the namespace and to cluster-scoped
// objects (see keeps).
func (s scopeFlags) scopedKeepingCluster(expr string) string {
	if c := s.cel(); c != "" {
		return "(" + c + ` || ns == "") && (` + expr + ")"
	}
	return expr
}

// scoped narrows the CEL expression expr to the namespace; expr "" stands
// for every record.
func (s scopeFlags) scoped(expr string) string {
	c := s.cel()
	switch {
	case c == "":
		return expr
	case expr == "":
		return c
	}
	return c + " && (" + expr + ")"
}

// ---- -o json|yaml ----

// structured reports whether an output format is a data format (json,
// yaml) rather than a table or text.
func structured(format string) bool { return format == "json" || format == "yaml" }

// encodeData prints v as JSON or YAML. YAML is made from the JSON encoding
// (sigs.k8s.io/yaml goes through the json tags), so both carry the same
// contract, field for field. Both escape control characters themselves
// (\u001b in JSON, \e in YAML), so they bypass the terminal writer.
// Commands print with Factory.writeData, which marks a partial answer.
func encodeData(w io.Writer, format string, v any) error {
	if format != "yaml" {
		return writeJSON(w, v)
	}
	b, err := toYAML(v)
	if err != nil {
		return err
	}
	_, err = termsafe.Raw(w).Write(b)
	return err
}

// toYAML is yaml.Marshal for values that may carry any string from the
// evidence. The YAML reader under sigs.k8s.io/yaml refuses DEL and the C1
// controls that JSON leaves raw ("control characters are not allowed"), so
// they are escaped in the JSON first; the YAML writer escapes them again.
func toYAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, r := range string(j) {
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return yaml.JSONToYAML([]byte(b.String()))
}

// checkOutput refuses an -o value the command does not print.
func checkOutput(o string, allowed ...string) error {
	for _, a := range allowed {
		if o == a {
			return nil
		}
	}
	return usagef("-o "+allowed[0], "invalid --output %q: want one of %s", o, strings.Join(allowed, ", "))
}

// ---- --no-headers ----

// addNoHeaders registers --no-headers on a command that prints tables.
func addNoHeaders(cmd *cobra.Command, f *Factory) {
	cmd.Flags().BoolVar(&f.noHeaders, "no-headers", false, "print tables without their header row (for awk, cut, sort)")
}

// header prints a table's header row unless --no-headers was given.
func (f *Factory) header(w io.Writer, row string) {
	if !f.noHeaders {
		fmt.Fprintln(w, row)
	}
}

// ---- --since, --until, --since-data ----

// durationRE is a duration with a leading count of days: 1d, 1.5d, 2d12h.
var durationRE = regexp.MustCompile(`^-?([0-9]+(?:\.[0-9]+)?)d(.*)$`)

// parseDuration is time.ParseDuration that also takes days ("1d", "2d12h"),
// as --since users of kubectl logs and Prometheus expect. The sign is
// dropped: "-30m" means "30m" back.
func parseDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil {
		if d == math.MinInt64 { // no positive twin
			return 0, false
		}
		return abs(d), true
	}
	m := durationRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	days, err := strconv.ParseFloat(m[1], 64)
	// Below 2^63 ns with room for float rounding: the conversion must not wrap.
	if err != nil || days*24*float64(time.Hour) >= 0x1p62 {
		return 0, false
	}
	d := time.Duration(days * 24 * float64(time.Hour))
	if rest := m[2]; rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || r < 0 || d+r < d {
			return 0, false
		}
		d += r
	}
	return d, true
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// isDuration reports whether a time flag's value is a duration (counted
// back from a reference) rather than an absolute time.
func isDuration(s string) bool {
	_, ok := parseDuration(s)
	return s != "" && ok
}

// windowFlags are --since, --until and --since-data.
type windowFlags struct {
	since, until string
	fromData     bool
}

// addSinceData registers --since-data beside a command's --since.
func addSinceData(fs *pflag.FlagSet, p *bool) {
	fs.BoolVar(p, "since-data", false, "count --since and --until durations back from the end of the data instead of from now")
}

// bounder is the part of the store that knows the span of the evidence.
type bounder interface {
	Bounds(ctx context.Context) (first, last time.Time, err error)
}

// resolve turns --since and --until into instants. A duration counts back
// from now (f.Now), as in kubectl logs --since, or from the end of the data
// with --since-data. When the data ends before the window starts, a note on
// stderr says so, so an old timeline never silently looks empty. An
// instant a timeline cannot hold is a usage error.
func (w windowFlags) resolve(ctx context.Context, f *Factory, store bounder) (since, until time.Time, err error) {
	if w.since == "" && w.until == "" {
		return since, until, nil
	}
	_, last, err := store.Bounds(ctx)
	if err != nil {
		return since, until, err
	}
	ref := f.Now().UTC()
	if w.fromData {
		ref = last
	}
	if since, err = parseWhen("since", w.since, ref); err != nil {
		return since, until, err
	}
	if until, err = parseWhen("until", w.until, ref); err != nil {
		return since, until, err
	}
	for _, c := range []struct {
		flag, val string
		t         time.Time
	}{{"since", w.since, since}, {"until", w.until, until}} {
		if isDuration(c.val) {
			if err := timeline.CheckTime(c.t); err != nil {
				return since, until, usagef("--"+c.flag+" 1d", "invalid --%s %q: %v", c.flag, c.val, err)
			}
		}
	}
	if !w.fromData && isDuration(w.since) && !last.IsZero() && last.Before(since) {
		fmt.Fprintf(f.IO.ErrOut, "note: the timeline ends at %s, %s before --since (%s); use --since-data to count from the end of the data\n",
			last.UTC().Format(time.RFC3339), humanAge(since.Sub(last)), since.UTC().Format(time.RFC3339))
	}
	return since, until, nil
}

// parseWhen reads a time flag: RFC 3339, or a duration (90m, 1d) back from
// end.
func parseWhen(flag, s string, end time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, ok := parseDuration(s); ok {
		return end.Add(-d), nil
	}
	return time.Time{}, usagef("faultline timeline --since 2h --where 'code == 429'",
		"invalid --%s %q: want RFC 3339 (2026-05-01T10:00:00Z) or a duration (90m, 1d)", strings.TrimPrefix(flag, "--"), s)
}
