package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/timeline"
)

// MaxPoints is the most points Prometheus returns per series from one
// query_range (it refuses more: "exceeded maximum resolution of 11,000
// points per timeseries").
const MaxPoints = 11000

// Live is a read of a live Prometheus through /api/v1/query_range.
type Live struct {
	URL          string // the server, e.g. http://127.0.0.1:9090
	Query        string // PromQL
	Since, Until time.Time
	Step         time.Duration
	// Rate is the most queries a second (<= 0: DefaultRate).
	Rate float64
	// Points is the most points per series per query (<= 0 or more than
	// MaxPoints: MaxPoints).
	Points int
	Client *http.Client // nil: a client with a 2-minute timeout
	Strict bool
	OnSkip input.OnSkip
	// OnChunk hears of each window committed.
	OnChunk func(Chunk)
}

// DefaultRate paces a live read: one query a second.
const DefaultRate = 1.0

// Chunk is one window of a live read: [Start, End] evaluated every step.
type Chunk struct {
	Start, End time.Time
	Series     int64
	Samples    int64
}

// CursorName is where a live read of query from url keeps how far it has
// committed (IngestState.Cursor, Batch.SetCursor).
func CursorName(u, query string) string { return "metrics\x00" + u + "\x00" + query }

// LiveStore is what a live read needs of the store.
type LiveStore interface {
	timeline.Appender
	timeline.IngestState
}

// Chunks splits [since, until] into windows of at most points evaluation
// instants each (since, since+step, ...), in order, the next window
// starting a step after the last one ended.
func Chunks(since, until time.Time, step time.Duration, points int) [][2]time.Time {
	var out [][2]time.Time
	span := step * time.Duration(points-1)
	for s := since; !s.After(until); {
		e := s.Add(span)
		if e.After(until) {
			e = s.Add((until.Sub(s) / step) * step)
		}
		out = append(out, [2]time.Time{s, e})
		s = e.Add(step)
	}
	return out
}

// IngestLive reads l's query over [Since, Until] in chunks, paced, into one
// run. Each chunk commits with a cursor, so a rerun of the same URL and
// query continues after the last chunk committed; Ctrl-C keeps what was
// committed.
func IngestLive(ctx context.Context, store LiveStore, l Live) (*timeline.IngestRun, error) {
	l = l.withDefaults()
	name := CursorName(l.URL, l.Query)
	start, err := resume(ctx, store, name, l)
	if err != nil {
		return nil, err
	}
	run := &timeline.IngestRun{Source: timeline.SourceMetrics, Path: l.URL + "/api/v1/query_range?query=" + url.QueryEscape(l.Query), Size: -1}
	if err := store.BeginRun(ctx, run); err != nil {
		return nil, err
	}
	w, err := newWriter(ctx, store, run, "", Options{Strict: l.Strict, OnSkip: l.OnSkip, Nameless: l.Query})
	if err != nil {
		return run, err
	}
	err = l.chunks(ctx, store, w, name, start)
	run.Size = 0
	return run, w.batch.Finish(ctx, store, nil, err)
}

// resume is where the read starts: Since, or the cursor of an earlier
// read if later (and on Since's grid of steps).
func resume(ctx context.Context, store timeline.IngestState, name string, l Live) (time.Time, error) {
	c, err := store.Cursor(ctx, name)
	if err != nil || c == "" {
		return l.Since, err
	}
	t, err := time.Parse(time.RFC3339Nano, c)
	if err != nil {
		return l.Since, nil // not ours: start again, the samples held are duplicates
	}
	if t.After(l.Since) {
		return l.Since.Add(((t.Sub(l.Since) + l.Step - 1) / l.Step) * l.Step), nil
	}
	return l.Since, nil
}

func (l Live) withDefaults() Live {
	if l.Rate <= 0 {
		l.Rate = DefaultRate
	}
	if l.Points <= 0 || l.Points > MaxPoints {
		l.Points = MaxPoints
	}
	if l.Client == nil {
		l.Client = &http.Client{Timeout: 2 * time.Minute}
	}
	l.URL = strings.TrimRight(l.URL, "/")
	return l
}

// chunks reads each window from start and commits it with the cursor.
func (l Live) chunks(ctx context.Context, store LiveStore, w *writer, name string, start time.Time) error {
	var last time.Time
	interval := time.Duration(float64(time.Second) / l.Rate)
	for _, c := range Chunks(start, l.Until, l.Step, l.Points) {
		if err := pace(ctx, last, interval); err != nil {
			return err
		}
		last = time.Now()
		body, err := QueryRange(ctx, l.Client, l.URL, l.Query, c[0], c[1], l.Step)
		if err != nil {
			return fmt.Errorf("%s: %w", l.chunkName(c), err)
		}
		if err := l.commitChunk(ctx, store, w, name, body, c); err != nil {
			return err
		}
	}
	return nil
}

// commitChunk stores one window's response and moves the cursor past it,
// in the same commit.
func (l Live) commitChunk(ctx context.Context, store LiveStore, w *writer, name string, body []byte, c [2]time.Time) error {
	series, samples := w.series, w.samples
	w.name = l.chunkName(c)
	err := ParseAPI(body, l.Query, w.add, w.skip)
	if err == nil {
		err = w.stop
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		err = &input.Skip{Path: w.name, Line: fe.Line, Err: fe}
	}
	if err != nil {
		var se *storeError
		if errors.As(err, &se) {
			return se.err
		}
		return fmt.Errorf("%s: %w", w.name, err)
	}
	if err := w.batch.Batch().SetCursor(ctx, name, c[1].Add(l.Step).UTC().Format(time.RFC3339Nano)); err != nil {
		return err
	}
	if err := w.batch.Commit(ctx); err != nil {
		return err
	}
	b, err := newWriter(ctx, store, w.run, w.name, w.opt)
	if err != nil {
		return err
	}
	w.batch = b.batch
	if l.OnChunk != nil {
		l.OnChunk(Chunk{Start: c[0], End: c[1], Series: w.series - series, Samples: w.samples - samples})
	}
	return nil
}

// chunkName names a window's query in messages.
func (l Live) chunkName(c [2]time.Time) string {
	return fmt.Sprintf("query %q [%s, %s]", l.Query, c[0].Format(time.RFC3339), c[1].Format(time.RFC3339))
}

// pace waits until interval has passed since last.
func pace(ctx context.Context, last time.Time, interval time.Duration) error {
	wait := time.Until(last.Add(interval))
	if last.IsZero() || wait <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// HTTPError is an answer of Prometheus that is not a JSON API response.
type HTTPError struct {
	Status int
	Body   string // its start
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body)
}

// QueryRange asks base's /api/v1/query_range for query over [start, end]
// every step (a GET: read-only), and returns the response body: an API
// response with status success. Status error is an *APIError, any other
// answer an *HTTPError.
func QueryRange(ctx context.Context, client *http.Client, base, query string, start, end time.Time, step time.Duration) ([]byte, error) {
	q := url.Values{}
	q.Set("query", query)
	q.Set("start", unixSeconds(start))
	q.Set("end", unixSeconds(end))
	q.Set("step", strconv.FormatFloat(step.Seconds(), 'f', -1, 64))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/api/v1/query_range?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := readBounded(resp.Body, fmt.Sprintf("the answer to %q", query))
	if err != nil {
		return nil, err
	}
	var head struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
	}
	jerr := json.Unmarshal(body, &head)
	switch {
	case jerr == nil && head.Status == "error":
		return nil, &APIError{Type: head.ErrorType, Message: head.Error}
	case resp.StatusCode != http.StatusOK || jerr != nil:
		snippet := strings.TrimSpace(string(body))
		if len(snippet) > 200 {
			snippet = snippet[:200] + "..."
		}
		return nil, &HTTPError{Status: resp.StatusCode, Body: snippet}
	}
	return body, nil
}

// unixSeconds writes t as the API reads it: Unix seconds with the
// fraction it has.
func unixSeconds(t time.Time) string {
	sec := t.Unix()
	frac := t.Nanosecond()
	if frac == 0 {
		return strconv.FormatInt(sec, 10)
	}
	return strconv.FormatInt(sec, 10) + "." + strings.TrimRight(fmt.Sprintf("%09d", frac), "0")
}
