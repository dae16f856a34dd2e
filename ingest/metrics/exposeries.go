package metrics

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/faultline/faultline/timeline"
)

// seriesCache maps a sample line's series as written (with the format and
// the type in force, which the series made of it depends on) to that
// series, so a series read again, as every scrape of a target reads it,
// costs a map lookup instead of its labels, their sort and its hash. A nil
// series is a line that is no sample (an OpenMetrics _created). It holds
// at most seriesCacheBytes and starts over past them.
type seriesCache struct {
	m     map[string]*timeline.Series
	bytes int
}

// seriesCacheBytes bounds a seriesCache: some 200,000 series of the size
// exporters write.
const seriesCacheBytes = 64 << 20

func newSeriesCache() *seriesCache { return &seriesCache{m: map[string]*timeline.Series{}} }

func (c *seriesCache) put(key []byte, s *timeline.Series) {
	n := 2*len(key) + 64 // the key, and about as much again for the series
	if c.bytes+n > seriesCacheBytes {
		clear(c.m)
		c.bytes = 0
	}
	c.m[string(key)] = s
	c.bytes += n
}

// series is the series of the sample line ser, from the cache or made of
// the parser's labels; nil for a line that is no sample.
func (p *expoParser) series(tp textparse.Parser, ser []byte) (*timeline.Series, *FieldError) {
	p.key = append(append(p.key[:0], p.kind()), ser...)
	if s, ok := p.cache.m[string(p.key)]; ok {
		return s, nil
	}
	tp.Labels(&p.lbls)
	s, ferr := p.makeSeries()
	if ferr != nil {
		return nil, ferr
	}
	p.cache.put(p.key, s)
	return s, nil
}

// typeKinds numbers the metric types for cache keys (unknown: 0).
var typeKinds = map[model.MetricType]byte{
	model.MetricTypeCounter: 1, model.MetricTypeGauge: 2, model.MetricTypeHistogram: 3,
	model.MetricTypeGaugeHistogram: 4, model.MetricTypeSummary: 5, model.MetricTypeInfo: 6,
	model.MetricTypeStateset: 7,
}

// kind is the first byte of a cache key: the format and the type in force.
func (p *expoParser) kind() byte {
	k := typeKinds[p.typ]
	if p.f == FormatOpenMetrics {
		k |= 0x80
	}
	return k
}

// makeSeries makes the series of the parser's labels (p.lbls). Like
// Prometheus's scrape, it refuses a label given twice and leaves out an
// OpenMetrics _created line of a counter, histogram or summary (a start
// time, not a sample). Labels with an empty value are dropped; le and
// quantile values are written as ParseFloat and formatFloat make them.
func (p *expoParser) makeSeries() (*timeline.Series, *FieldError) {
	name := p.lbls.Get(labels.MetricName)
	if dup, ok := p.lbls.HasDuplicateLabelNames(); ok {
		return nil, &FieldError{Field: name, Problem: fmt.Sprintf("label %q given twice", dup)}
	}
	if name == "" {
		return nil, &FieldError{Field: string(p.f), Problem: "a sample without a metric name"}
	}
	if p.f == FormatOpenMetrics && strings.HasSuffix(name, "_created") && hasCreated(p.typ) {
		return nil, nil
	}
	ls := make(timeline.Labels, 0, p.lbls.Len()-1)
	p.lbls.Range(func(l labels.Label) {
		if l.Name != labels.MetricName && l.Value != "" {
			ls = append(ls, timeline.Label{Name: l.Name, Value: p.labelValue(l)})
		}
	})
	return timeline.NewSeries(name, ls), nil
}

// hasCreated tells the OpenMetrics types whose NAME_created line is the
// start time of the family's counts.
func hasCreated(t model.MetricType) bool {
	return t == model.MetricTypeCounter || t == model.MetricTypeHistogram || t == model.MetricTypeSummary
}

// labelValue is l's value; a histogram's le and a summary's quantile are
// numbers, written the one way formatFloat writes them ("1", not "1.0").
func (p *expoParser) labelValue(l labels.Label) string {
	hist := p.typ == model.MetricTypeHistogram || p.typ == model.MetricTypeGaugeHistogram
	if l.Name == model.BucketLabel && hist || l.Name == model.QuantileLabel && p.typ == model.MetricTypeSummary {
		if f, err := strconv.ParseFloat(l.Value, 64); err == nil {
			return formatFloat(f)
		}
	}
	return l.Value
}

// formatFloat writes a le or quantile label value as Prometheus's text
// format does.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
