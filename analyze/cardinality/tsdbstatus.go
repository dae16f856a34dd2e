package cardinality

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// InputError is a fault in a saved /api/v1/status/tsdb answer: the file,
// the line and the field.
type InputError struct {
	File  string
	Line  int    // 0: not known
	Field string // "" : the whole answer
	Err   error
}

func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Err.Error())
	return b.String()
}

func (e *InputError) Unwrap() error { return e.Err }

// tsdbStatus is /api/v1/status/tsdb's answer, or its data alone.
type tsdbStatus struct {
	Status    string    `json:"status"`
	ErrorType string    `json:"errorType"`
	Error     string    `json:"error"`
	Data      *tsdbData `json:"data"`
	tsdbData            // the data object saved alone
}

type tsdbData struct {
	HeadStats                   *headStats  `json:"headStats"`
	SeriesCountByMetricName     []nameValue `json:"seriesCountByMetricName"`
	LabelValueCountByLabelName  []nameValue `json:"labelValueCountByLabelName"`
	MemoryInBytesByLabelName    []nameValue `json:"memoryInBytesByLabelName"`
	SeriesCountByLabelValuePair []nameValue `json:"seriesCountByLabelValuePair"`
}

type headStats struct {
	NumSeries int64 `json:"numSeries"`
	MaxTime   int64 `json:"maxTime"`
}

type nameValue struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

// maxStatusBytes bounds a saved status answer.
const maxStatusBytes = 64 << 20

// ReadTSDBStatus reads a saved /api/v1/status/tsdb answer (the whole
// response, or its data) and reports it as Run reports ingested series:
// one instant (its head's maxTime), no churn, and no per-metric
// multipliers, which the status does not give. name names the input in
// errors.
func ReadTSDBStatus(r io.Reader, name string, o Options) (*Report, error) {
	// A status answer lists the top few per table: kilobytes. Past
	// maxStatusBytes it is no such answer, and is not read whole.
	raw, err := io.ReadAll(io.LimitReader(r, maxStatusBytes+1))
	if err != nil {
		return nil, &InputError{File: name, Err: err}
	}
	if len(raw) > maxStatusBytes {
		return nil, &InputError{File: name, Err: fmt.Errorf("over %d MiB: not an /api/v1/status/tsdb answer", maxStatusBytes>>20)}
	}
	var st tsdbStatus
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, jsonError(name, raw, err)
	}
	if st.Status == "error" {
		return nil, &InputError{File: name, Err: fmt.Errorf("Prometheus answered %s: %s", cmp.Or(st.ErrorType, "error"), st.Error)}
	}
	d := st.Data
	if d == nil {
		d = &st.tsdbData
	}
	if d.SeriesCountByMetricName == nil && d.LabelValueCountByLabelName == nil {
		return nil, &InputError{File: name, Field: "data.seriesCountByMetricName", Err: errors.New("missing: not an /api/v1/status/tsdb answer")}
	}
	if err := d.check(name); err != nil {
		return nil, err
	}
	return d.report(o), nil
}

// jsonError names the line (and the field) of a JSON fault.
func jsonError(name string, raw []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &InputError{File: name, Line: lineAt(raw, syn.Offset), Err: err}
	case errors.As(err, &typ):
		return &InputError{File: name, Line: lineAt(raw, typ.Offset), Field: typ.Field, Err: fmt.Errorf("want %s, got %s", typ.Type, typ.Value)}
	}
	return &InputError{File: name, Err: err}
}

func lineAt(raw []byte, off int64) int {
	off = min(max(off, 0), int64(len(raw)))
	return bytes.Count(raw[:off], []byte("\n")) + 1
}

// check refuses negative counts and pairs without "=".
func (d *tsdbData) check(name string) error {
	for _, l := range []struct {
		field string
		list  []nameValue
	}{{"seriesCountByMetricName", d.SeriesCountByMetricName}, {"labelValueCountByLabelName", d.LabelValueCountByLabelName},
		{"memoryInBytesByLabelName", d.MemoryInBytesByLabelName}, {"seriesCountByLabelValuePair", d.SeriesCountByLabelValuePair}} {
		for i, nv := range l.list {
			field := fmt.Sprintf("data.%s[%d]", l.field, i)
			switch {
			case nv.Value < 0:
				return &InputError{File: name, Field: field + ".value", Err: fmt.Errorf("%d: a count is never negative", nv.Value)}
			case l.field == "seriesCountByLabelValuePair" && !strings.Contains(nv.Name, "="):
				return &InputError{File: name, Field: field + ".name", Err: fmt.Errorf("%q: want label=value", nv.Name)}
			}
		}
	}
	if d.HeadStats != nil && d.HeadStats.NumSeries < 0 {
		return &InputError{File: name, Field: "data.headStats.numSeries", Err: fmt.Errorf("%d: a count is never negative", d.HeadStats.NumSeries)}
	}
	return nil
}

// report is the status as a Report.
func (d *tsdbData) report(o Options) *Report {
	o.At, o.Vs = time.Time{}, time.Time{}
	rep := newReport("tsdb-status", o)
	top := o.top()
	if h := d.HeadStats; h != nil {
		rep.Series = int(h.NumSeries)
		if h.MaxTime > 0 {
			rep.At = time.UnixMilli(h.MaxTime).UTC()
		}
	}
	for _, m := range d.SeriesCountByMetricName {
		if o.Metric == "" || m.Name == o.Metric {
			rep.Metrics = append(rep.Metrics, Metric{Name: m.Name, Series: int(m.Value)})
		}
	}
	slices.SortFunc(rep.Metrics, func(a, b Metric) int { return cmp.Or(cmp.Compare(b.Series, a.Series), strings.Compare(a.Name, b.Name)) })
	rep.Metrics = first(rep.Metrics, top)
	rep.Labels = d.labels(rep)
	slices.SortFunc(rep.Labels, func(a, b Label) int {
		return cmp.Or(cmp.Compare(b.Values, a.Values), cmp.Compare(b.MemoryBytes, a.MemoryBytes), strings.Compare(a.Name, b.Name))
	})
	rep.Worst = statusWorst(rep.Labels)
	rep.Labels = first(rep.Labels, top)
	for _, p := range d.SeriesCountByLabelValuePair {
		n, v, _ := strings.Cut(p.Name, "=")
		rep.Pairs = append(rep.Pairs, Pair{Name: n, Value: v, Series: int(p.Value)})
	}
	slices.SortFunc(rep.Pairs, func(a, b Pair) int {
		return cmp.Or(cmp.Compare(b.Series, a.Series), strings.Compare(a.Name, b.Name), strings.Compare(a.Value, b.Value))
	})
	rep.Pairs = first(rep.Pairs, top)
	rep.Notes = append(rep.Notes, "a tsdb status lists only the top entries of each kind (Prometheus: 10 by default, ?limit=N) and "+
		"says neither which metrics carry a label nor how many series it multiplies: ingest the series (faultline ingest metrics) for the multipliers, the churn and the series a fix saves")
	if o.Metric != "" {
		rep.Notes = append(rep.Notes, "--metric narrows only the metric list of a tsdb status")
	}
	return rep
}

// labels joins the value counts and the memory by label name; __name__
// counts the metric names.
func (d *tsdbData) labels(rep *Report) []Label {
	by := map[string]*Label{}
	get := func(n string) *Label {
		l := by[n]
		if l == nil {
			l = &Label{Name: n}
			by[n] = l
		}
		return l
	}
	for _, l := range d.LabelValueCountByLabelName {
		if l.Name == "__name__" {
			rep.MetricCount = int(l.Value)
			continue
		}
		get(l.Name).Values = int(l.Value)
	}
	for _, l := range d.MemoryInBytesByLabelName {
		if l.Name != "__name__" {
			get(l.Name).MemoryBytes = l.Value
		}
	}
	out := make([]Label, 0, len(by))
	for _, l := range by {
		out = append(out, *l)
	}
	rep.LabelCount = len(out)
	return out
}

// statusWorst is the label with the most values, of those a fix may
// remove (labels sorted by values); how many series it saves is unknown.
func statusWorst(labels []Label) *Worst {
	for _, l := range labels {
		if !keptLabels[l.Name] && l.Values > 1 {
			return &Worst{Label: l.Name, Fixes: []Fix{dropFix(l.Name, nil, 0)}}
		}
	}
	return nil
}
