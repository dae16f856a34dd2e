package clickhouse

import (
	"context"
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/timeline"
)

// Series and samples (SCHEMA.md "Series and samples"): a series is keyed
// by timeline.SeriesID, the same as in SQLite, and its samples live on the
// shard of their series (both are sharded by intHash64 of the series id).

// sampleRow is one sample waiting in a batch.
type sampleRow struct {
	series, t int64
	v         float64
}

// sampleBuf is what a batch holds of samples until it flushes them.
type sampleBuf struct {
	series map[int64]*timeline.Series
	rows   []sampleRow
}

// AddSamples takes samples into the batch; whether each is new is judged
// at flush, against the samples held, and Commit corrects the run's
// tallies. It reports them all new.
func (b *batch) AddSamples(ctx context.Context, s *timeline.Series, samples []timeline.Sample) (int, error) {
	for _, sm := range samples {
		if err := timeline.CheckTime(sm.Time); err != nil {
			return 0, fmt.Errorf("add samples of %s: %w", s, err)
		}
	}
	if b.samples.series == nil {
		b.samples.series = map[int64]*timeline.Series{}
	}
	b.samples.series[s.ID] = s
	for _, sm := range samples {
		b.samples.rows = append(b.samples.rows, sampleRow{s.ID, ns(sm.Time), sm.Value})
	}
	if len(b.samples.rows) >= sampleFlushAt {
		if err := b.flushSamples(context.WithoutCancel(ctx)); err != nil {
			return 0, fmt.Errorf("add samples: %w", err)
		}
	}
	return len(samples), nil
}

// sampleFlushAt is how many samples a batch holds before it writes them:
// inserts of at least 10,000 rows suit the engine.
const sampleFlushAt = 100000

// flushSamples writes the samples held that the database does not hold
// yet (nor an earlier one of this flush), after their new series, and
// counts the others as duplicates in the batch's corrections.
func (b *batch) flushSamples(ctx context.Context) error {
	buf := &b.samples
	if len(buf.rows) == 0 {
		return nil
	}
	held, err := b.heldSamples(ctx)
	if err != nil {
		return err
	}
	keep := buf.rows[:0]
	for _, r := range buf.rows {
		k := [2]int64{r.series, r.t}
		if held[k] {
			b.delta.Records--
			b.delta.Duplicates++
			continue
		}
		held[k] = true
		keep = append(keep, r)
	}
	if err := b.writeSeries(ctx); err != nil {
		return err
	}
	if err := b.writeSamples(ctx, keep); err != nil {
		return err
	}
	buf.rows, buf.series = nil, nil
	return nil
}

// heldSamples reads the (series, time) of the samples held for the series
// of the batch that are held, within the batch's span.
func (b *batch) heldSamples(ctx context.Context) (map[[2]int64]bool, error) {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, r := range b.samples.rows {
		lo, hi = min(lo, r.t), max(hi, r.t)
	}
	ids := make([]int64, 0, len(b.samples.series))
	for id := range b.samples.series {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	held := map[[2]int64]bool{}
	for chunk := range slices.Chunk(ids, lookupChunk) {
		q := fmt.Sprintf("SELECT series, time_ns FROM sample WHERE time_ns >= %d AND time_ns <= %d AND series IN (%s)", lo, hi, intList(chunk))
		rows, err := b.s.conn.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("look up held samples: %w", b.s.shardErr(ctx, err))
		}
		for rows.Next() {
			var k [2]int64
			if err := rows.Scan(&k[0], &k[1]); err != nil {
				rows.Close()
				return nil, fmt.Errorf("look up held samples: %w", err)
			}
			held[k] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("look up held samples: %w", b.s.shardErr(ctx, err))
		}
	}
	return held, nil
}

// intList writes ids as a SQL list.
func intList(ids []int64) string {
	var in strings.Builder
	for i, k := range ids {
		if i > 0 {
			in.WriteByte(',')
		}
		in.WriteString(strconv.FormatInt(k, 10))
	}
	return in.String()
}

// writeSeries writes the batch's series; one written again is the same
// row under the same id, which the engine folds.
func (b *batch) writeSeries(ctx context.Context) error {
	ins, err := b.s.conn.PrepareBatch(ctx, insert("series"))
	if err != nil {
		return fmt.Errorf("write series: %w", b.s.shardErr(ctx, err))
	}
	ids := make([]int64, 0, len(b.samples.series))
	for id := range b.samples.series {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		s := b.samples.series[id]
		names, values := make([]string, len(s.Labels)), make([]string, len(s.Labels))
		for i, l := range s.Labels {
			names[i], values[i] = l.Name, l.Value
		}
		if err := ins.Append(s.ID, s.Metric, names, values, b.run); err != nil {
			return fmt.Errorf("write series: %w", err)
		}
	}
	if err := ins.Send(); err != nil {
		return fmt.Errorf("write series: %w", b.s.shardErr(ctx, err))
	}
	return nil
}

// writeSamples inserts rows.
func (b *batch) writeSamples(ctx context.Context, rows []sampleRow) error {
	if len(rows) == 0 {
		return nil
	}
	ins, err := b.s.conn.PrepareBatch(ctx, insert("sample"))
	if err != nil {
		return fmt.Errorf("write samples: %w", b.s.shardErr(ctx, err))
	}
	for _, r := range rows {
		if err := ins.Append(r.series, r.t, r.v, b.run); err != nil {
			return fmt.Errorf("write samples: %w", err)
		}
	}
	if err := ins.Send(); err != nil {
		return fmt.Errorf("write samples: %w", b.s.shardErr(ctx, err))
	}
	return nil
}

// Series yields the series q selects, by metric then labels. The span is
// judged on each shard against its own samples (a series' samples are on
// its shard); the matchers in Go (SeriesQuery.Match), as in SQLite.
func (s *Store) Series(ctx context.Context, q timeline.SeriesQuery) iter.Seq2[*timeline.Series, error] {
	return timeline.SeriesOf(s.series(ctx, q))
}

func (s *Store) series(ctx context.Context, q timeline.SeriesQuery) ([]*timeline.Series, error) {
	where, args := []string{"1"}, []any{}
	if q.Metric != "" {
		where, args = append(where, "metric = ?"), append(args, q.Metric)
	}
	if !q.Since.IsZero() || !q.Until.IsZero() {
		where = append(where, fmt.Sprintf("id IN (SELECT series FROM %s.sample_local WHERE %s)", s.db, sampleSpan(q.Since, q.Until)))
	}
	rows, err := s.conn.Query(ctx, "SELECT id, metric, names, values FROM "+final("series", strings.Join(where, " AND ")), args...)
	if err != nil {
		return nil, s.shardErr(ctx, err)
	}
	defer rows.Close()
	var out []*timeline.Series
	for rows.Next() {
		sr := &timeline.Series{}
		var names, values []string
		if err := rows.Scan(&sr.ID, &sr.Metric, &names, &values); err != nil {
			return nil, err
		}
		for i := range names {
			sr.Labels = append(sr.Labels, timeline.Label{Name: names[i], Value: values[i]})
		}
		if q.Match(sr) {
			out = append(out, sr)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.shardErr(ctx, err)
	}
	slices.SortFunc(out, timeline.CompareSeries)
	return out, nil
}

// PresentSeries answers q span by span through Series, its strings
// interned as they come: the cardinality analysis reads the same table
// from ClickHouse as from SQLite.
func (s *Store) PresentSeries(ctx context.Context, q timeline.PresenceQuery) (*timeline.SeriesTable, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	var b timeline.SeriesTableBuilder
	for i, sp := range q.Spans {
		list, err := s.series(ctx, timeline.SeriesQuery{Metric: q.Metric, Since: sp.Since, Until: sp.Until})
		if err != nil {
			return nil, fmt.Errorf("read series: %w", err)
		}
		for _, sr := range list {
			b.Add(sr, 1<<i)
		}
	}
	return b.Table(), nil
}

// sampleSpan is the condition of [since, until) on time_ns (zero:
// unbounded).
func sampleSpan(since, until time.Time) string {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !since.IsZero() {
		lo = boundNS(since)
	}
	if !until.IsZero() {
		hi = boundNS(until)
	}
	return fmt.Sprintf("time_ns >= %d AND time_ns < %d", lo, hi)
}

// Samples yields the samples of the series in [since, until), by series
// in the order given, then time.
func (s *Store) Samples(ctx context.Context, series []int64, since, until time.Time) iter.Seq2[timeline.Sample, error] {
	return func(yield func(timeline.Sample, error) bool) {
		for chunk := range slices.Chunk(series, lookupChunk) {
			got, err := s.samples(ctx, chunk, since, until)
			if err != nil {
				yield(timeline.Sample{}, fmt.Errorf("read samples: %w", err))
				return
			}
			for _, id := range chunk {
				for _, sm := range got[id] {
					if !yield(sm, nil) {
						return
					}
				}
			}
		}
	}
}

// samples reads the samples of some series, each series' in time order.
func (s *Store) samples(ctx context.Context, ids []int64, since, until time.Time) (map[int64][]timeline.Sample, error) {
	where := sampleSpan(since, until) + " AND series IN (" + intList(ids) + ")"
	rows, err := s.conn.Query(ctx, "SELECT series, time_ns, value FROM "+final("sample", where)+" ORDER BY series, time_ns")
	if err != nil {
		return nil, s.shardErr(ctx, err)
	}
	defer rows.Close()
	out := map[int64][]timeline.Sample{}
	for rows.Next() {
		var id, t int64
		var v float64
		if err := rows.Scan(&id, &t, &v); err != nil {
			return nil, err
		}
		out[id] = append(out[id], timeline.Sample{Series: id, Time: fromNS(t), Value: v})
	}
	return out, s.shardErr(ctx, rows.Err())
}
