package timeline

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Label is one label of a time series.
type Label struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Labels are a series' labels, sorted by name, each name once, none empty
// of value (Prometheus drops a label with an empty value), and without
// __name__ (the metric is Series.Metric).
type Labels []Label

// Get returns the value of the label name, or "".
func (ls Labels) Get(name string) string {
	i, ok := slices.BinarySearchFunc(ls, name, func(l Label, n string) int { return cmp.Compare(l.Name, n) })
	if !ok {
		return ""
	}
	return ls[i].Value
}

// NewLabels makes Labels of name/value pairs: sorted by name, empty values
// and __name__ left out. A name given twice keeps its last value.
func NewLabels(pairs map[string]string) Labels {
	ls := make(Labels, 0, len(pairs))
	for n, v := range pairs {
		if v != "" && n != MetricNameLabel {
			ls = append(ls, Label{n, v})
		}
	}
	slices.SortFunc(ls, func(a, b Label) int { return cmp.Compare(a.Name, b.Name) })
	return ls
}

// MetricNameLabel is the label Prometheus keeps a series' metric name in.
const MetricNameLabel = "__name__"

// Series is one time series: a metric and its labels. Its ID is SeriesID
// of the two, the same in every store, so a store needs no lookup to place
// a sample.
type Series struct {
	ID     int64  `json:"id"`
	Metric string `json:"metric"`
	Labels Labels `json:"labels"`
}

// String writes the series as Prometheus does: metric{a="x", b="y"}.
func (s *Series) String() string {
	var b strings.Builder
	b.WriteString(s.Metric)
	b.WriteByte('{')
	for i, l := range s.Labels {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(l.Name)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(l.Value))
	}
	b.WriteByte('}')
	return b.String()
}

// SeriesID is the natural key of a series: a hash of its metric and sorted
// labels (KeyHash), which the stores key series and samples by.
func SeriesID(metric string, labels Labels) int64 {
	var b strings.Builder
	b.WriteString("series\x00")
	b.WriteString(metric)
	for _, l := range labels {
		b.WriteByte(0)
		b.WriteString(l.Name)
		b.WriteByte(0)
		b.WriteString(l.Value)
	}
	return KeyHash(b.String())
}

// NewSeries makes a series with its ID.
func NewSeries(metric string, labels Labels) *Series {
	return &Series{ID: SeriesID(metric, labels), Metric: metric, Labels: labels}
}

// Sample is one value of a series at a time. Its natural key is (Series,
// Time): a store keeps the first value it was given for it.
type Sample struct {
	Series int64     `json:"series"`
	Time   time.Time `json:"time"`
	Value  float64   `json:"value"`
}

// SampleBatch is the part of a write Batch that takes samples: they commit
// with the batch's records, cursors and the run's progress, or not at all.
// A metrics run counts the samples added in IngestRun.Records and those
// already held in IngestRun.Duplicates.
type SampleBatch interface {
	// AddSamples stores samples of s (their Series is taken from s.ID),
	// and s itself if it is new. It returns how many samples were new: a
	// sample at a time the series holds already is not, nor one given
	// twice. A store that learns this only when it writes what it holds
	// (both do: samples of many series are written together) reports them
	// all new here and corrects the run's Records and Duplicates in
	// Commit. It keeps neither samples nor their slice past the call.
	AddSamples(ctx context.Context, s *Series, samples []Sample) (added int, err error)
}

// MatchOp is how a label matcher compares, as in PromQL.
type MatchOp string

// Matcher operators.
const (
	MatchEqual     MatchOp = "="
	MatchNotEqual  MatchOp = "!="
	MatchRegexp    MatchOp = "=~"
	MatchNotRegexp MatchOp = "!~"
)

// Matcher selects series by one label, as a PromQL label matcher does: a
// missing label has the value "", and a regular expression matches the
// whole value.
type Matcher struct {
	Name  string  `json:"name"`
	Op    MatchOp `json:"op"`
	Value string  `json:"value"`
	re    *regexp.Regexp
}

// NewMatcher checks and compiles a matcher.
func NewMatcher(name string, op MatchOp, value string) (*Matcher, error) {
	m := &Matcher{Name: name, Op: op, Value: value}
	switch op {
	case MatchEqual, MatchNotEqual:
	case MatchRegexp, MatchNotRegexp:
		re, err := regexp.Compile("^(?s:" + value + ")$")
		if err != nil {
			return nil, fmt.Errorf("label matcher %s%s%q: %w", name, op, value, err)
		}
		m.re = re
	default:
		return nil, fmt.Errorf("label matcher %s: unknown operator %q: want =, !=, =~ or !~", name, op)
	}
	return m, nil
}

// Matches reports whether a label value (or "" for a missing label)
// passes the matcher.
func (m *Matcher) Matches(v string) bool {
	switch m.Op {
	case MatchEqual:
		return v == m.Value
	case MatchNotEqual:
		return v != m.Value
	case MatchRegexp:
		return m.re.MatchString(v)
	case MatchNotRegexp:
		return !m.re.MatchString(v)
	}
	return false
}

// SeriesQuery selects series: of one metric (or all for ""), passing every
// matcher (the name __name__ matches the metric), with at least one sample
// in [Since, Until) (zero: unbounded; both zero: every series held).
type SeriesQuery struct {
	Metric       string
	Matchers     []*Matcher
	Since, Until time.Time
}

// Match reports whether s passes q's metric and matchers (not its time
// span, which the store judges).
func (q *SeriesQuery) Match(s *Series) bool {
	if q.Metric != "" && s.Metric != q.Metric {
		return false
	}
	for _, m := range q.Matchers {
		v := s.Metric
		if m.Name != MetricNameLabel {
			v = s.Labels.Get(m.Name)
		}
		if !m.Matches(v) {
			return false
		}
	}
	return true
}

// SeriesReader reads the series and samples ingested from Prometheus
// evidence.
type SeriesReader interface {
	// Series yields the series q selects, ordered by metric then labels
	// (CompareSeries), so two stores holding the same series answer alike.
	Series(ctx context.Context, q SeriesQuery) iter.Seq2[*Series, error]
	// Samples yields the samples of the given series in [since, until)
	// (zero: unbounded), by series in the order given, then time.
	Samples(ctx context.Context, series []int64, since, until time.Time) iter.Seq2[Sample, error]
}

// CompareSeries orders series by metric, then labels (name, then value,
// pair by pair; fewer labels first), then ID.
func CompareSeries(a, b *Series) int {
	if c := cmp.Compare(a.Metric, b.Metric); c != 0 {
		return c
	}
	for i := 0; i < len(a.Labels) && i < len(b.Labels); i++ {
		if c := cmp.Or(cmp.Compare(a.Labels[i].Name, b.Labels[i].Name), cmp.Compare(a.Labels[i].Value, b.Labels[i].Value)); c != 0 {
			return c
		}
	}
	return cmp.Or(cmp.Compare(len(a.Labels), len(b.Labels)), cmp.Compare(a.ID, b.ID))
}

// SeriesOf yields list, or err: for a store that reads its series whole
// before it sorts them.
func SeriesOf(list []*Series, err error) iter.Seq2[*Series, error] {
	return func(yield func(*Series, error) bool) {
		if err != nil {
			yield(nil, fmt.Errorf("read series: %w", err))
			return
		}
		for _, s := range list {
			if !yield(s, nil) {
				return
			}
		}
	}
}
