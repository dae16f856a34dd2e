package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

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

// maxBadLines bounds the bad lines skipped in one snapshot: past it the
// input is most likely no snapshot at all.
const maxBadLines = 100

// ErrTooManyBad stops a snapshot with more than maxBadLines bad lines.
var ErrTooManyBad = fmt.Errorf("more than %d bad lines: is it a /metrics snapshot?", maxBadLines)

// MaxLineBytes bounds one line of a snapshot. A /metrics line is one
// sample or one comment, a few hundred bytes; a longer one is refused with
// the file before any parser sees it, so no parser's cost in the length of
// a line can turn hostile input into a hang.
const MaxLineBytes = 1 << 20

// maxProblem bounds the text of a parser's message in a FieldError: the
// parsers quote the line they stopped in.
const maxProblem = 240

// ParseExposition reads a /metrics snapshot in the text format or
// OpenMetrics with Prometheus's own scrape parsers
// (github.com/prometheus/prometheus/model/textparse), as Prometheus reads
// a scrape: each sample line is a series (a histogram's NAME_bucket{le},
// NAME_sum, NAME_count as written). A sample without its own timestamp
// takes at. A bad line is handed to bad and left out, and the reading goes
// on after it. A line over MaxLineBytes, or a NUL byte, refuses the whole
// input with a *FieldError naming the line. It returns how many samples
// carried their own timestamp.
func ParseExposition(data []byte, f Format, at time.Time, each SeriesFunc, bad BadFunc) (own int, err error) {
	return parseExposition(data, f, at, nil, each, bad)
}

// parseExposition is ParseExposition with a cache of the series already
// read (nil: a cache of its own).
func parseExposition(data []byte, f Format, at time.Time, cache *seriesCache, each SeriesFunc, bad BadFunc) (int, error) {
	if fe := checkLines(data, f); fe != nil {
		return 0, fe
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data[:len(data):len(data)], '\n') // a copy: the parsers read lines to their end
	}
	if cache == nil {
		cache = newSeriesCache()
	}
	p := &expoParser{data: data, f: f, at: at, cache: cache, each: each, bad: bad, line: 1,
		st: labels.NewSymbolTable(), buf: make([]timeline.Sample, 1)}
	for {
		err := p.run(p.newParser())
		var stop *stopError
		switch {
		case err == nil:
			return p.own, nil
		case errors.As(err, &stop):
			return p.own, stop.err
		case !p.skipBad(err):
			return p.own, &FieldError{Line: max(p.line-1, 1), Field: string(f), Problem: problem(err)}
		case p.skipped > maxBadLines:
			return p.own, ErrTooManyBad
		}
	}
}

// checkLines refuses data with a line over MaxLineBytes or a NUL byte
// (which the parsers take for the end of the input), naming the line.
func checkLines(data []byte, f Format) *FieldError {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return &FieldError{Line: lineAt(data, i), Field: string(f), Problem: "NUL byte: a /metrics snapshot is text"}
	}
	line := int64(1)
	for rest := data; len(rest) > 0; line++ {
		n := bytes.IndexByte(rest, '\n')
		if n < 0 {
			n = len(rest)
		}
		if n > MaxLineBytes {
			return &FieldError{Line: line, Field: string(f), Problem: fmt.Sprintf(
				"line of %d bytes, over the %d MiB a line of a /metrics snapshot may have: refused, not parsed", n, MaxLineBytes>>20)}
		}
		rest = rest[min(n+1, len(rest)):]
	}
	return nil
}

// problem is a parser's message, cut to maxProblem bytes.
func problem(err error) string {
	s := err.Error()
	if len(s) > maxProblem {
		s = strings.ToValidUTF8(s[:maxProblem], "") + "..."
	}
	return s
}

// stopError is what a SeriesFunc returned: it ends the reading.
type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }

// expoParser reads one snapshot: it runs a textparse parser from pos, and
// after a bad line a new one from the line after it.
type expoParser struct {
	data    []byte
	f       Format
	at      time.Time
	cache   *seriesCache
	each    SeriesFunc
	bad     BadFunc
	st      *labels.SymbolTable
	pos     int   // where the next entry starts: a line's start, or len(data)
	line    int64 // the line number of pos
	typ     model.MetricType
	lbls    labels.Labels
	key     []byte
	buf     []timeline.Sample // the one sample handed to each
	own     int
	skipped int
}

// newParser is a parser of the format over data from pos.
func (p *expoParser) newParser() textparse.Parser {
	if p.f == FormatOpenMetrics {
		return textparse.NewOpenMetricsParser(p.data[p.pos:], p.st)
	}
	return textparse.NewPromParser(p.data[p.pos:], p.st, false)
}

// run reads entries until the end, a parser's error, or a stopError.
func (p *expoParser) run(tp textparse.Parser) error {
	for {
		e, err := tp.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch e {
		case textparse.EntryType:
			name, typ := tp.Type()
			p.advance(name)
			p.typ = typ
		case textparse.EntryHelp:
			name, _ := tp.Help()
			p.advance(name)
		case textparse.EntryUnit:
			name, _ := tp.Unit()
			p.advance(name)
		case textparse.EntryComment:
			p.advance(tp.Comment())
		case textparse.EntrySeries:
			ser, ts, v := tp.Series()
			if err := p.sample(tp, p.advance(ser), ser, ts, v); err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry of kind %d: not a float sample", e)
		}
	}
}

// advance moves pos past the entry whose bytes include part (a slice of
// data the parser returned) and returns the entry's line. part locates the
// entry exactly, blank lines and line breaks inside quoted names included;
// if it is not a slice of data, the entry is taken to be the next line.
func (p *expoParser) advance(part []byte) int64 {
	start, end := p.pos, p.pos
	if off, ok := offsetIn(p.data, part); ok && off >= p.pos {
		start, end = off, off+len(part)
	}
	p.line += int64(bytes.Count(p.data[p.pos:start], []byte{'\n'}))
	at := p.line
	next := len(p.data)
	if nl := bytes.IndexByte(p.data[end:], '\n'); nl >= 0 {
		next = end + nl + 1
	}
	p.line += int64(bytes.Count(p.data[start:next], []byte{'\n'}))
	p.pos = next
	return at
}

// offsetIn is where part starts in data, if it is a slice of data: a slice
// keeps the capacity to the end of its array, and its first element's
// address tells it apart from a copy.
func offsetIn(data, part []byte) (int, bool) {
	off := cap(data) - cap(part)
	if len(part) == 0 || off < 0 || off+len(part) > len(data) || &data[off] != &part[0] {
		return 0, false
	}
	return off, true
}

// skipBad reports the line a parser stopped in as bad and moves pos past
// it; it returns false when no line is left (the error is the input's).
func (p *expoParser) skipBad(err error) bool {
	for p.f != FormatOpenMetrics && p.pos < len(p.data) { // the text format allows blank lines
		nl := bytes.IndexByte(p.data[p.pos:], '\n')
		if len(bytes.Trim(p.data[p.pos:p.pos+nl], " \t")) > 0 {
			break
		}
		p.pos += nl + 1
		p.line++
	}
	if p.pos >= len(p.data) {
		return false
	}
	p.skipped++
	p.bad(&FieldError{Line: p.line, Field: string(p.f), Problem: problem(err)})
	p.pos += bytes.IndexByte(p.data[p.pos:], '\n') + 1
	p.line++
	return true
}

// sample hands the sample of a series entry at line to each; a sample the
// timeline cannot hold is reported bad.
func (p *expoParser) sample(tp textparse.Parser, line int64, ser []byte, ts *int64, v float64) error {
	s, ferr := p.series(tp, ser)
	if ferr != nil {
		ferr.Line = line
		return p.badSample(ferr)
	}
	if s == nil {
		return nil // an OpenMetrics _created line: not a sample
	}
	t := p.at
	if ts != nil {
		t = time.UnixMilli(*ts).UTC()
	}
	if err := timeline.CheckTime(t); err != nil {
		return p.badSample(&FieldError{Line: line, Field: s.Metric, Problem: err.Error()})
	}
	if ts != nil {
		p.own++
	}
	p.buf[0] = timeline.Sample{Series: s.ID, Time: t, Value: v}
	if err := p.each(s, p.buf); err != nil {
		return &stopError{err}
	}
	return nil
}

// badSample reports a sample line the parser read but the timeline cannot
// take, and stops past maxBadLines.
func (p *expoParser) badSample(fe *FieldError) error {
	p.skipped++
	p.bad(fe)
	if p.skipped > maxBadLines {
		return &stopError{ErrTooManyBad}
	}
	return nil
}
