// Package alerts turns an investigated incident into alert definitions:
// for each signal of the incident, its slice, the normal range learned from
// the known-good window before the boundary, the shortest persistence that
// would not have fired there, the owner and the exact mitigation. It
// replays definitions over the timeline (when each would have fired, how
// early, and every false positive in the known-good window), and writes
// them as Prometheus alerting rules, refusing rules whose series would be
// unbounded.
//
// The definition format is documented in docs/alerts.md and
// docs/alerts.schema.json. The package never prints and never imports an
// ingester.
package alerts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/faultline/faultline/timeline"
)

// SchemaVersion is the version of the definition format.
const SchemaVersion = 1

// Defaults of a suggestion: the evaluation interval and the window a
// signal is counted over.
const (
	DefaultInterval = 5 * time.Second
	DefaultWindow   = 30 * time.Second
)

// File is a set of alert definitions.
type File struct {
	SchemaVersion int `json:"schemaVersion"`
	// Interval is how often the rules are evaluated (the Prometheus rule
	// group's interval; the backtest's step).
	Interval Duration `json:"interval"`
	// Incident says where the definitions were learned, when they were.
	Incident *Incident    `json:"incident,omitempty"`
	Alerts   []Definition `json:"alerts"`
}

// Incident is the evidence a file was learned from.
type Incident struct {
	Name     string    `json:"name,omitempty"`
	LastGood time.Time `json:"lastGood"`
	FirstBad time.Time `json:"firstBad"`
}

// Definition is one alert.
type Definition struct {
	Name     string            `json:"name"`
	Summary  string            `json:"summary"`
	Signal   Signal            `json:"signal"`
	Slice    map[string]string `json:"slice,omitempty"`
	Normal   Normal            `json:"normal"`
	For      Duration          `json:"for"`
	Severity string            `json:"severity"`
	Owner    Owner             `json:"owner"`
	// Mitigation is the exact action the alert should trigger.
	Mitigation string `json:"mitigation"`
	Runbook    string `json:"runbook"`
	// Cause is what the investigation blamed, where it cannot be a label
	// (a ConfigMap's content hash): it goes into the rule's annotations.
	Cause string `json:"cause,omitempty"`
}

// Signal kinds over timeline records.
const (
	KindRate     = "rate"     // matching records per second over the window
	KindRatio    = "ratio"    // records matching count / records matching of
	KindQuantile = "quantile" // a quantile of the latency of matching records, in seconds
)

// Signal kinds over the stored Prometheus series (faultline ingest
// metrics), as the PromQL computes them (metric.go).
const (
	KindMetricRate     = "metricRate"     // sum(rate(series[window]))
	KindMetricRatio    = "metricRatio"    // sum(rate(series[window])) / sum(rate(per[window]))
	KindMetricQuantile = "metricQuantile" // histogram_quantile(quantile, sum by (le) (rate(series[window])))
	KindMetricUsage    = "metricUsage"    // max(series / per): a gauge against its limit, the fullest
)

var recordKinds = []string{KindRate, KindRatio, KindQuantile}
var metricKinds = []string{KindMetricRate, KindMetricRatio, KindMetricQuantile, KindMetricUsage}

// Signal is what an alert watches: a CEL expression over timeline records
// (timeline.CompileFilter), counted per window, a ratio of two, or a
// latency quantile; or stored metric series, the same over counters, a
// histogram or a gauge against its limit; and the PromQL expression that
// measures the same in the exported rule.
type Signal struct {
	Kind     string    `json:"kind"`
	Count    string    `json:"count,omitempty"`    // record kinds
	Of       string    `json:"of,omitempty"`       // ratio only
	Series   *Selector `json:"series,omitempty"`   // metric kinds
	Per      *Selector `json:"per,omitempty"`      // metricRatio and metricUsage: the denominator
	Quantile float64   `json:"quantile,omitempty"` // quantile and metricQuantile only
	Window   Duration  `json:"window"`
	PromQL   string    `json:"promql"`
}

// Selector selects stored series: a metric, and labels its series must
// have (equal values).
type Selector struct {
	Metric string            `json:"metric"`
	Match  map[string]string `json:"match,omitempty"`
}

// IsMetric says whether the signal reads metric series, not records.
func (s *Signal) IsMetric() bool { return slices.Contains(metricKinds, s.Kind) }

// Normal is the normal range of a signal: the alert fires while the
// signal is above Max (or below Min, where given) for the persistence.
type Normal struct {
	Min     *float64 `json:"min,omitempty"`
	Max     float64  `json:"max"`
	Learned *Learned `json:"learned,omitempty"`
}

// Learned says how a normal range and persistence were learned.
type Learned struct {
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Samples  int       `json:"samples"`
	Quantile float64   `json:"quantile"`
	Value    float64   `json:"value"`  // the quantile of the known-good values
	Margin   float64   `json:"margin"` // Max = max(Value*(1+Margin), Value+Floor)
	Floor    float64   `json:"floor"`
	Peak     float64   `json:"peak"` // the largest known-good value
	// LongestBreach is the longest run of known-good evaluations above
	// Max: the persistence is the shortest that outlasts it.
	LongestBreach Duration `json:"longestBreach"`
}

// Owner is who is paged.
type Owner struct {
	Team     string `json:"team"`
	Rotation string `json:"rotation"`
}

// Severities.
var severities = []string{"page", "ticket", "info"}

// Duration is a time.Duration written as Prometheus writes durations
// ("30s", "1m", "1m30s").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(FormatDuration(time.Duration(d)))
}

// UnmarshalJSON reads "30s", "1m", "1h30m" (Go's or Prometheus's syntax).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as \"30s\", got %s", b)
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

var promDuration = regexp.MustCompile(`^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$`)

// ParseDuration parses a Prometheus duration (1d2h3m4s5ms) or a Go one.
func ParseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return 0, fmt.Errorf("duration %q: must not be negative", s)
		}
		return d, nil
	}
	m := promDuration.FindStringSubmatch(s)
	if m == nil || s == "" {
		return 0, fmt.Errorf("invalid duration %q: want e.g. 30s, 1m, 1m30s", s)
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second, time.Millisecond} {
		if m[i+1] != "" {
			var n int64
			fmt.Sscan(m[i+1], &n)
			d += time.Duration(n) * unit
		}
	}
	return d, nil
}

// FormatDuration writes a duration as Prometheus does: "0s", "30s",
// "1m30s", "2h", "500ms".
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	if d < 0 {
		return "-" + FormatDuration(-d)
	}
	var b strings.Builder
	for _, u := range []struct {
		d time.Duration
		s string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.s)
			d -= n * u.d
		}
	}
	if b.Len() == 0 {
		return "0s" // below a millisecond: Prometheus cannot say it
	}
	return b.String()
}

// Parse reads a definition file (YAML or JSON) and validates it. Errors
// name the alert and the field.
func Parse(data []byte) (*File, error) {
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, err
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

var alertName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Validate checks a file: names, kinds, CEL expressions, ranges.
func (f *File) Validate() error {
	if f.SchemaVersion != SchemaVersion {
		return fmt.Errorf("schemaVersion: want %d, got %d", SchemaVersion, f.SchemaVersion)
	}
	if f.Interval.D() < time.Second {
		// Prometheus evaluates rules every few seconds to a minute; below
		// a second the exported rule would not run as backtested.
		return fmt.Errorf("interval: %s: want at least 1s, such as 15s", f.Interval.D())
	}
	if len(f.Alerts) == 0 {
		return fmt.Errorf("alerts: none defined")
	}
	seen := map[string]bool{}
	for i := range f.Alerts {
		d := &f.Alerts[i]
		at := fmt.Sprintf("alerts[%d]", i)
		if d.Name != "" {
			at += " (" + d.Name + ")"
		}
		if err := d.validate(f.Interval.D()); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if seen[d.Name] {
			return fmt.Errorf("%s: name: %q is defined twice", at, d.Name)
		}
		seen[d.Name] = true
	}
	return nil
}

func (d *Definition) validate(interval time.Duration) error {
	if !alertName.MatchString(d.Name) {
		return fmt.Errorf("name: %q is not a Prometheus alert name ([a-zA-Z_][a-zA-Z0-9_]*)", d.Name)
	}
	s := &d.Signal
	var err error
	switch {
	case slices.Contains(recordKinds, s.Kind):
		err = s.validateRecords()
	case s.IsMetric():
		err = s.validateMetric()
	default:
		err = fmt.Errorf("signal.kind: %q: want %s or %s", s.Kind, strings.Join(recordKinds, ", "), strings.Join(metricKinds, ", "))
	}
	if err != nil {
		return err
	}
	if (s.Kind == KindQuantile || s.Kind == KindMetricQuantile) && (s.Quantile <= 0 || s.Quantile > 1) {
		return fmt.Errorf("signal.quantile: %v: want 0 < q <= 1", s.Quantile)
	}
	if s.Window.D() < interval {
		return fmt.Errorf("signal.window: %s is shorter than the interval %s", FormatDuration(s.Window.D()), FormatDuration(interval))
	}
	if strings.TrimSpace(s.PromQL) == "" {
		return fmt.Errorf("signal.promql: empty: the exported rule needs the metric expression")
	}
	if d.Normal.Min != nil && *d.Normal.Min > d.Normal.Max {
		return fmt.Errorf("normal: min %v is above max %v", *d.Normal.Min, d.Normal.Max)
	}
	if d.For < 0 {
		return fmt.Errorf("for: must not be negative")
	}
	ok := false
	for _, v := range severities {
		ok = ok || d.Severity == v
	}
	if !ok {
		return fmt.Errorf("severity: %q: want one of %s", d.Severity, strings.Join(severities, ", "))
	}
	if d.Owner.Team == "" {
		return fmt.Errorf("owner.team: empty: say who is paged")
	}
	if strings.TrimSpace(d.Mitigation) == "" {
		return fmt.Errorf("mitigation: empty: say the exact action the alert should trigger")
	}
	return nil
}

// validateRecords checks a signal over records: its CEL, and no series.
func (s *Signal) validateRecords() error {
	if _, err := timeline.CompileFilter(s.Count); err != nil {
		return fmt.Errorf("signal.count: %w", err)
	}
	if s.Kind == KindRatio {
		if _, err := timeline.CompileFilter(s.Of); err != nil {
			return fmt.Errorf("signal.of: %w", err)
		}
	} else if s.Of != "" {
		return fmt.Errorf("signal.of: only a ratio has a denominator")
	}
	if s.Series != nil || s.Per != nil {
		return fmt.Errorf("signal.series: a %s signal counts records (count); series are for %s", s.Kind, strings.Join(metricKinds, ", "))
	}
	return nil
}

var metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// validateMetric checks a signal over series: its selectors, no CEL.
func (s *Signal) validateMetric() error {
	if s.Count != "" || s.Of != "" {
		return fmt.Errorf("signal.count: a %s signal reads series (series, per), not records", s.Kind)
	}
	if err := s.Series.validate("signal.series"); err != nil {
		return err
	}
	needPer := s.Kind == KindMetricRatio || s.Kind == KindMetricUsage
	switch {
	case needPer:
		if err := s.Per.validate("signal.per"); err != nil {
			return err
		}
	case s.Per != nil:
		return fmt.Errorf("signal.per: only a metricRatio or metricUsage has a denominator")
	}
	if s.Kind == KindMetricQuantile && !strings.HasSuffix(s.Series.Metric, "_bucket") {
		return fmt.Errorf("signal.series.metric: %q: a metricQuantile reads a histogram's _bucket series", s.Series.Metric)
	}
	return nil
}

func (sel *Selector) validate(at string) error {
	if sel == nil {
		return fmt.Errorf("%s: missing: say the metric read", at)
	}
	if !metricName.MatchString(sel.Metric) {
		return fmt.Errorf("%s.metric: %q is not a Prometheus metric name", at, sel.Metric)
	}
	for k := range sel.Match {
		if !alertName.MatchString(k) {
			return fmt.Errorf("%s.match: %q is not a Prometheus label name", at, k)
		}
	}
	return nil
}

// Metrics are the metrics the file's metric signals read, sorted.
func (f *File) Metrics() []string {
	var out []string
	for _, d := range f.Alerts {
		for _, sel := range []*Selector{d.Signal.Series, d.Signal.Per} {
			if sel != nil && !slices.Contains(out, sel.Metric) {
				out = append(out, sel.Metric)
			}
		}
	}
	sort.Strings(out)
	return out
}

// YAML writes the file as YAML, fields in declaration order.
func (f *File) YAML() ([]byte, error) {
	return YAML(f)
}

// JSON writes the file as indented JSON.
func (f *File) JSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// SliceString writes a slice as "k=v,k=v", keys sorted.
func SliceString(s map[string]string) string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + s[k]
	}
	return strings.Join(parts, ",")
}
