// Package metrics ingests Prometheus evidence into the timeline as series
// and samples: JSON saved from the HTTP API (/api/v1/query_range matrix
// results, /api/v1/query vector results), text exposition and OpenMetrics
// snapshots of a /metrics page, and a live Prometheus read through
// query_range in paced, resumable chunks.
package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/faultline/faultline/timeline"
)

// FieldError is one bad piece of input: the line it stands on (from 1; 0
// where the input has no lines, as a live query), the field and the
// problem.
type FieldError struct {
	Line    int64
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// MaxBytes bounds what is read whole: a file (after decompression) or
// one live answer. A Prometheus answer is one JSON document, parsed whole;
// past this it would cost gigabytes of memory, so it is refused instead.
var MaxBytes int64 = 256 << 20

// TooLargeError is input past MaxBytes.
type TooLargeError struct {
	What  string // the file, or "the answer to QUERY"
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is over %d MiB, more than is read whole: split it into shorter windows, or read it live (--prometheus), which asks in chunks", e.What, e.Limit>>20)
}

// readBounded reads r whole, up to MaxBytes; more is a *TooLargeError
// naming what.
func readBounded(r io.Reader, what string) ([]byte, error) {
	return readBoundedInto(nil, r, what, 0)
}

// readBoundedInto is readBounded reading into buf's memory, grown to hint
// bytes (a file's size) first: the files of one ingest reuse one buffer
// instead of growing a new one each.
func readBoundedInto(buf []byte, r io.Reader, what string, hint int64) ([]byte, error) {
	limit := MaxBytes
	// Past the limit, or unknown, the size hints nothing: the bytes read
	// decide, and what is too large is refused before it is all held.
	if hint > 0 && hint <= limit && int64(cap(buf)) < hint+bytes.MinRead {
		buf = make([]byte, 0, hint+bytes.MinRead)
	}
	b := bytes.NewBuffer(buf[:0])
	_, err := b.ReadFrom(io.LimitReader(r, limit+1))
	data := b.Bytes()
	if err != nil {
		return data, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{What: what, Limit: limit}
	}
	return data, nil
}

// APIError is a response in which Prometheus said status "error".
type APIError struct {
	Type    string // errorType: bad_data, execution, timeout, canceled...
	Message string // error
}

func (e *APIError) Error() string {
	return fmt.Sprintf("Prometheus answered status error: %s: %s", e.Type, e.Message)
}

// SeriesFunc takes one series read and its samples, in time order as the
// input gave them. The parser may reuse the slice of samples once it
// returns.
type SeriesFunc func(s *timeline.Series, samples []timeline.Sample) error

// BadFunc hears of each bad piece of input skipped.
type BadFunc func(*FieldError)

// ParseAPI reads the JSON of a Prometheus API response: a matrix
// (query_range) or a vector (query: one instant). Series without a
// __name__ (the result of an expression) take the metric nameless. A
// response with status error is an *APIError; input that is no such
// response a *FieldError. A bad series or sample is handed to bad and
// skipped.
func ParseAPI(data []byte, nameless string, each SeriesFunc, bad BadFunc) error {
	if !gjson.ValidBytes(data) {
		return syntaxError(data)
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return &FieldError{Line: 1, Field: "json", Problem: "not an object: want a Prometheus API response {\"status\": ..., \"data\": ...}"}
	}
	switch st := root.Get("status"); st.String() {
	case "success":
	case "error":
		return &APIError{Type: root.Get("errorType").String(), Message: root.Get("error").String()}
	default:
		return &FieldError{Line: lineAt(data, st.Index), Field: "status", Problem: fmt.Sprintf("%s: want \"success\" or \"error\"", describe(st))}
	}
	rt := root.Get("data.resultType")
	res := root.Get("data.result")
	if !res.IsArray() {
		return &FieldError{Line: lineAt(data, res.Index), Field: "data.result", Problem: describe(res) + ": want an array"}
	}
	p := &apiParser{data: data, nameless: nameless, each: each, bad: bad}
	switch rt.String() {
	case "matrix":
		return p.results(res, "values")
	case "vector":
		return p.results(res, "value")
	}
	return &FieldError{Line: lineAt(data, rt.Index), Field: "data.resultType",
		Problem: fmt.Sprintf("%s: want matrix (query_range) or vector (query)", describe(rt))}
}

// describe names a JSON value in a message: its text, cut short, or
// "missing".
func describe(r gjson.Result) string {
	if !r.Exists() {
		return "missing"
	}
	s := r.Raw
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strconv.Quote(s)
}

// syntaxError says where data stops being JSON.
func syntaxError(data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return &FieldError{Line: lineAt(data, int(se.Offset)-1), Field: "json", Problem: se.Error()}
	case len(bytes.TrimSpace(data)) == 0:
		return &FieldError{Line: 1, Field: "json", Problem: "empty input"}
	case err != nil:
		return &FieldError{Line: lineAt(data, len(data)), Field: "json", Problem: "truncated: " + err.Error()}
	}
	return &FieldError{Line: 1, Field: "json", Problem: "not valid JSON"}
}

// lineAt is the line (from 1) of byte offset off.
func lineAt(data []byte, off int) int64 {
	off = max(0, min(off, len(data)))
	return int64(bytes.Count(data[:off], []byte{'\n'})) + 1
}

type apiParser struct {
	data     []byte
	nameless string
	each     SeriesFunc
	bad      BadFunc
	err      error
}

// results reads each series of the result; key is "values" (matrix) or
// "value" (vector).
func (p *apiParser) results(res gjson.Result, key string) error {
	i := 0
	res.ForEach(func(_, r gjson.Result) bool {
		field := fmt.Sprintf("data.result[%d]", i)
		i++
		s, ferr := p.series(r, field)
		if ferr != nil {
			p.bad(ferr)
			return true
		}
		vals := r.Get(key)
		var samples []timeline.Sample
		if key == "value" && vals.IsArray() {
			samples = p.samples(gjson.Result{Type: gjson.JSON, Raw: "[" + vals.Raw + "]", Index: vals.Index - 1}, field+"."+key, s.ID, true)
		} else {
			samples = p.samples(vals, field+"."+key, s.ID, false)
		}
		if len(samples) > 0 {
			p.err = p.each(s, samples)
		}
		return p.err == nil
	})
	return p.err
}

// series reads a result's metric object.
func (p *apiParser) series(r gjson.Result, field string) (*timeline.Series, *FieldError) {
	m := r.Get("metric")
	if !m.IsObject() {
		return nil, &FieldError{Line: lineAt(p.data, r.Index), Field: field + ".metric", Problem: describe(m) + ": want an object of label names and values"}
	}
	labels := map[string]string{}
	var ferr *FieldError
	m.ForEach(func(k, v gjson.Result) bool {
		if v.Type != gjson.String {
			ferr = &FieldError{Line: lineAt(p.data, v.Index), Field: field + ".metric." + k.String(), Problem: describe(v) + ": want a string"}
			return false
		}
		labels[k.String()] = v.String()
		return true
	})
	if ferr != nil {
		return nil, ferr
	}
	name, ok := labels[timeline.MetricNameLabel]
	if !ok {
		name = p.nameless
	}
	if h := r.Get("histograms"); h.Exists() && !r.Get("values").Exists() && !r.Get("value").Exists() {
		return nil, &FieldError{Line: lineAt(p.data, h.Index), Field: field + ".histograms", Problem: "native histograms are not read: query their _count, _sum or histogram_quantile instead"}
	}
	return timeline.NewSeries(name, timeline.NewLabels(labels)), nil
}

// samples reads [[time, "value"], ...]; a bad pair is reported and left
// out.
func (p *apiParser) samples(vals gjson.Result, field string, series int64, one bool) []timeline.Sample {
	if !vals.IsArray() {
		p.bad(&FieldError{Line: lineAt(p.data, vals.Index), Field: field, Problem: describe(vals) + ": want [[time, \"value\"], ...]"})
		return nil
	}
	var out []timeline.Sample
	j := 0
	vals.ForEach(func(_, pair gjson.Result) bool {
		at := j
		j++
		sm, ferr := p.sample(pair, func() string { // named only when bad
			if one {
				return field
			}
			return fmt.Sprintf("%s[%d]", field, at)
		})
		if ferr != nil {
			p.bad(ferr)
			return true
		}
		sm.Series = series
		out = append(out, sm)
		return true
	})
	return out
}

// sample reads one [time, "value"] pair.
func (p *apiParser) sample(pair gjson.Result, name func() string) (timeline.Sample, *FieldError) {
	var t, v gjson.Result
	n := 0
	pair.ForEach(func(_, x gjson.Result) bool {
		switch n {
		case 0:
			t = x
		case 1:
			v = x
		}
		n++
		return n <= 2
	})
	if !pair.IsArray() || n != 2 {
		return timeline.Sample{}, &FieldError{Line: lineAt(p.data, pair.Index), Field: name(), Problem: describe(pair) + ": want [time, \"value\"]"}
	}
	if t.Type != gjson.Number {
		return timeline.Sample{}, &FieldError{Line: lineAt(p.data, t.Index), Field: name() + "[0]", Problem: describe(t) + ": want Unix seconds"}
	}
	at, err := ParseUnixSeconds(t.Raw)
	if err != nil {
		return timeline.Sample{}, &FieldError{Line: lineAt(p.data, t.Index), Field: name() + "[0]", Problem: err.Error()}
	}
	if v.Type != gjson.String {
		return timeline.Sample{}, &FieldError{Line: lineAt(p.data, v.Index), Field: name() + "[1]", Problem: describe(v) + ": want a string such as \"1.5\" or \"NaN\""}
	}
	val, err := ParseValue(v.Str)
	if err != nil {
		return timeline.Sample{}, &FieldError{Line: lineAt(p.data, v.Index), Field: name() + "[1]", Problem: err.Error()}
	}
	return timeline.Sample{Time: at, Value: val}, nil
}

// ParseValue reads a sample value as Prometheus writes it: a float, NaN,
// +Inf or -Inf.
func ParseValue(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return v, nil // ±Inf or 0, as Prometheus reads it
		}
		return 0, fmt.Errorf("%q: not a number (want a float, NaN, +Inf or -Inf)", s)
	}
	return v, nil
}

// ParseUnixSeconds reads a Unix time in seconds as the API writes it
// (1714557600.123), exactly to the nanosecond.
func ParseUnixSeconds(s string) (time.Time, error) {
	sec, frac, hasFrac := strings.Cut(s, ".")
	if strings.ContainsAny(s, "eE") || sec == "" || sec == "-" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e11 {
			return time.Time{}, fmt.Errorf("%q: not a Unix time in seconds", s)
		}
		return checkedTime(time.Unix(0, int64(math.Round(f*1e9))).UTC(), s)
	}
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || n > 1e11 || n < -1e11 {
		return time.Time{}, fmt.Errorf("%q: not a Unix time in seconds", s)
	}
	var nanos int64
	if hasFrac {
		if frac == "" || len(frac) > 9 && strings.Trim(frac[9:], "0123456789") != "" {
			return time.Time{}, fmt.Errorf("%q: not a Unix time in seconds", s)
		}
		frac = (frac + "000000000")[:9]
		if nanos, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return time.Time{}, fmt.Errorf("%q: not a Unix time in seconds", s)
		}
		if strings.HasPrefix(sec, "-") {
			nanos = -nanos
		}
	}
	return checkedTime(time.Unix(n, nanos).UTC(), s)
}

// checkedTime refuses a time outside what the timeline holds.
func checkedTime(t time.Time, s string) (time.Time, error) {
	if err := timeline.CheckTime(t); err != nil {
		return time.Time{}, fmt.Errorf("%q: %w", s, err)
	}
	return t, nil
}
