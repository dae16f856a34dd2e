package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/faultline/faultline/timeline"
)

// Format is a kind of input ingest metrics reads.
type Format string

// Input formats. FormatAuto tells them apart by their content.
const (
	FormatAuto        Format = ""
	FormatAPI         Format = "api"         // /api/v1/query_range or /api/v1/query JSON
	FormatText        Format = "text"        // text exposition format 0.0.4
	FormatOpenMetrics Format = "openmetrics" // OpenMetrics 1.0 text
)

// Detect tells the format of data: JSON is an API response; text whose
// last line is "# EOF" is OpenMetrics (its one mandatory mark); any other
// text the Prometheus text format.
func Detect(data []byte) Format {
	t := bytes.TrimSpace(data)
	switch {
	case bytes.HasPrefix(t, []byte("{")):
		return FormatAPI
	case bytes.HasSuffix(t, []byte("\n# EOF")) || bytes.Equal(t, []byte("# EOF")):
		return FormatOpenMetrics
	}
	return FormatText
}

// maxBadLines bounds the bad lines skipped in one snapshot: each costs a
// parse of the rest of the file again.
const maxBadLines = 100

// ErrTooManyBad stops a snapshot with more than maxBadLines bad lines.
var ErrTooManyBad = fmt.Errorf("more than %d bad lines: is it a /metrics snapshot?", maxBadLines)

// ParseExposition reads a /metrics snapshot in the text format or
// OpenMetrics with the parsers of github.com/prometheus/common/expfmt. A
// sample without its own timestamp takes at. A bad line is handed to bad
// and left out, and the rest is read again without it (the parsers stop at
// the first fault). It returns how many samples carried their own
// timestamp.
func ParseExposition(data []byte, f Format, at time.Time, each SeriesFunc, bad BadFunc) (own int, err error) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	orig := make([]int64, len(lines)) // line number in data of each line kept
	for i := range orig {
		orig[i] = int64(i + 1)
	}
	for skipped := 0; ; skipped++ {
		fams, err := decodeAll(bytes.Join(lines, nil), f)
		var pe expfmt.ParseError
		if err == nil {
			return emitFamilies(fams, at, each)
		}
		if !errors.As(err, &pe) || pe.Line < 1 || pe.Line > len(lines) {
			return 0, &FieldError{Line: lastLine(orig), Field: string(f), Problem: err.Error()}
		}
		bad(&FieldError{Line: orig[pe.Line-1], Field: string(f), Problem: pe.Msg})
		if skipped == maxBadLines {
			return 0, ErrTooManyBad
		}
		lines = append(lines[:pe.Line-1], lines[pe.Line:]...)
		orig = append(orig[:pe.Line-1], orig[pe.Line:]...)
	}
}

func lastLine(orig []int64) int64 {
	if len(orig) == 0 {
		return 1
	}
	return orig[len(orig)-1]
}

// decodeAll reads every metric family of data, names in UTF-8 allowed.
func decodeAll(data []byte, f Format) ([]*dto.MetricFamily, error) {
	format := expfmt.FmtText.WithEscapingScheme(model.NoEscaping)
	if f == FormatOpenMetrics {
		format = expfmt.FmtOpenMetrics_1_0_0.WithEscapingScheme(model.NoEscaping)
	}
	dec := expfmt.NewDecoder(bytes.NewReader(data), format)
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, mf)
	}
}

// emitFamilies flattens families into series as Prometheus stores them: a
// histogram as NAME_bucket{le}, NAME_sum and NAME_count; a summary as
// NAME{quantile}, NAME_sum and NAME_count. Exemplars and created
// timestamps (OpenMetrics _created) are not samples and are left out.
func emitFamilies(fams []*dto.MetricFamily, at time.Time, each SeriesFunc) (own int, err error) {
	for _, mf := range fams {
		for _, m := range mf.GetMetric() {
			t := at
			if m.TimestampMs != nil {
				t = time.UnixMilli(m.GetTimestampMs()).UTC()
				own++
			}
			if err := timeline.CheckTime(t); err != nil {
				return own, &FieldError{Field: mf.GetName(), Problem: err.Error()}
			}
			for _, fs := range flatten(mf, m) {
				s := timeline.NewSeries(fs.name, fs.labels)
				if err := each(s, []timeline.Sample{{Series: s.ID, Time: t, Value: fs.v}}); err != nil {
					return own, err
				}
			}
		}
	}
	return own, nil
}

// flatSample is one sample of a metric, flattened.
type flatSample struct {
	name   string
	labels timeline.Labels
	v      float64
}

// flatten turns one metric of a family into its samples.
func flatten(mf *dto.MetricFamily, m *dto.Metric) []flatSample {
	base := map[string]string{}
	for _, l := range m.GetLabel() {
		base[l.GetName()] = l.GetValue()
	}
	name := mf.GetName()
	one := func(suffix string, v float64, extra ...string) flatSample {
		ls := base
		if len(extra) > 0 {
			ls = map[string]string{extra[0]: extra[1]}
			for k, v := range base {
				ls[k] = v
			}
		}
		return flatSample{name + suffix, timeline.NewLabels(ls), v}
	}
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		return []flatSample{one("", m.GetCounter().GetValue())}
	case dto.MetricType_GAUGE:
		return []flatSample{one("", m.GetGauge().GetValue())}
	case dto.MetricType_SUMMARY:
		sm := m.GetSummary()
		out := []flatSample{one("_sum", sm.GetSampleSum()), one("_count", float64(sm.GetSampleCount()))}
		for _, q := range sm.GetQuantile() {
			out = append(out, one("", q.GetValue(), model.QuantileLabel, formatFloat(q.GetQuantile())))
		}
		return out
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		return histogram(mf.GetType(), m.GetHistogram(), one)
	}
	return []flatSample{one("", m.GetUntyped().GetValue())}
}

// histogram flattens a (gauge) histogram; a +Inf bucket missing from the
// input is the count, as Prometheus reads it.
func histogram(t dto.MetricType, h *dto.Histogram, one func(string, float64, ...string) flatSample) []flatSample {
	sum, count := "_sum", "_count"
	if t == dto.MetricType_GAUGE_HISTOGRAM {
		sum, count = "_gsum", "_gcount"
	}
	n := float64(h.GetSampleCount())
	if h.SampleCountFloat != nil {
		n = h.GetSampleCountFloat()
	}
	out := []flatSample{one(sum, h.GetSampleSum()), one(count, n)}
	inf := false
	for _, b := range h.GetBucket() {
		c := float64(b.GetCumulativeCount())
		if b.CumulativeCountFloat != nil {
			c = b.GetCumulativeCountFloat()
		}
		inf = inf || math.IsInf(b.GetUpperBound(), 1)
		out = append(out, one("_bucket", c, model.BucketLabel, formatFloat(b.GetUpperBound())))
	}
	if !inf {
		out = append(out, one("_bucket", n, model.BucketLabel, "+Inf"))
	}
	return out
}

// formatFloat writes a le or quantile label value as Prometheus does.
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
