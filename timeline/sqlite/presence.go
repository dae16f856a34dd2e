package sqlite

import (
	"context"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/faultline/faultline/timeline"
)

// presenceParts is how many reads of id ranges answer a PresenceQuery
// side by side, each on a connection of its own: series ids are hashes,
// so the ranges split the rows about evenly.
var presenceParts = [][2]int64{{math.MinInt64, -1}, {0, math.MaxInt64}}

// PresentSeries answers q in one query per id range: every series of
// q.Metric with a sample in one of q.Spans, with a bit for each span it
// has one in, its labels read as series_str ids. The table's Strings are
// the store's cached dictionary: read them only.
func (s *Store) PresentSeries(ctx context.Context, q timeline.PresenceQuery) (*timeline.SeriesTable, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	dict, _, err := s.dict(ctx)
	if err != nil {
		return nil, fmt.Errorf("read series: %w", err)
	}
	t := &timeline.SeriesTable{Strings: dict}
	query, args := presenceSQL(q, dict)
	if query == "" {
		return t, nil // a metric never seen
	}
	parts := make([]tablePart, len(presenceParts))
	errs := make([]error, len(presenceParts))
	var wg sync.WaitGroup
	for i, r := range presenceParts {
		wg.Go(func() {
			errs[i] = s.presentIn(ctx, query, append(slices.Clip(args), r[0], r[1]), len(dict), &parts[i])
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("read series: %w", err)
	}
	return joinParts(t, parts)
}

// tablePart is the rows of one id range, their labels' offsets into
// pairs, which are the part's own.
type tablePart struct {
	rows  chunks[timeline.SeriesRow]
	pairs chunks[uint32]
}

// joinParts puts the parts' rows and pairs into t, one after the other.
func joinParts(t *timeline.SeriesTable, parts []tablePart) (*timeline.SeriesTable, error) {
	n, np := 0, 0
	for _, p := range parts {
		n, np = n+p.rows.n, np+p.pairs.n
	}
	if np > math.MaxUint32 {
		return nil, fmt.Errorf("read series: %d label ids: more than a table holds", np)
	}
	t.Rows, t.Pairs = make([]timeline.SeriesRow, 0, n), make([]uint32, 0, np)
	for _, p := range parts {
		base, from := uint32(len(t.Pairs)), len(t.Rows)
		t.Rows, t.Pairs = p.rows.appendTo(t.Rows), p.pairs.appendTo(t.Pairs)
		for i := from; i < len(t.Rows); i++ {
			t.Rows[i].Start += base
			t.Rows[i].End += base
		}
	}
	return t, nil
}

// chunks is a list grown in blocks and copied once, at the end, where
// growing one slice would copy it about twice and clear each new array.
type chunks[T any] struct {
	full [][]T
	last []T
	n    int
}

const chunkLen = 1 << 16

func (c *chunks[T]) add(x T) {
	if len(c.last) == cap(c.last) {
		if c.last != nil {
			c.full = append(c.full, c.last)
		}
		c.last = make([]T, 0, chunkLen)
	}
	c.last = append(c.last, x)
	c.n++
}

func (c *chunks[T]) appendTo(dst []T) []T {
	for _, b := range c.full {
		dst = append(dst, b...)
	}
	return append(dst, c.last...)
}

// presenceSQL selects, of the series of q's metric, those with a sample
// in a span of q, each with its bits, in an id range (the last two
// parameters). It returns "" for a metric the dictionary does not hold.
func presenceSQL(q timeline.PresenceQuery, dict []string) (string, []any) {
	// Each condition twice: as a value SQLite evaluates AND and OR whole,
	// probing sample even where first_ns and last_ns decide; in WHERE
	// and CASE WHEN it stops at the first term that decides.
	var bits, either []string
	var args []any
	for i, sp := range q.Spans {
		lo, hi := sp.NS()
		args = append(args, lo, hi)
		cond := spanCond(2*i+1, 2*i+2)
		bits = append(bits, fmt.Sprintf("CASE WHEN %s THEN %d ELSE 0 END", cond, 1<<i))
		either = append(either, cond)
	}
	where := []string{"(" + strings.Join(either, " OR ") + ")"}
	if q.Metric != "" {
		id := slices.Index(dict, q.Metric)
		if id <= 0 {
			return "", nil
		}
		args = append(args, int64(id))
		where = append(where, fmt.Sprintf("metric = ?%d", len(args)))
	}
	where = append(where, fmt.Sprintf("id BETWEEN ?%d AND ?%d", len(args)+1, len(args)+2))
	return "SELECT id, metric, labels, " + strings.Join(bits, " + ") + " AS present FROM series WHERE " +
		strings.Join(where, " AND "), args
}

// presentIn runs one id range's query and decodes its rows into p.
func (s *Store) presentIn(ctx context.Context, query string, args []any, strs int, p *tablePart) error {
	return s.rawQuery(ctx, query, args, func(rows driver.Rows) error { return p.read(rows, strs) })
}

// rawQuery runs query on a connection of its own and hands the driver's
// rows to read (database/sql's Conn.Raw): a million rows through
// Rows.Scan cost more than SQLite takes to find them.
func (s *Store) rawQuery(ctx context.Context, query string, args []any, read func(driver.Rows) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return conn.Raw(func(dc any) error {
		q, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("driver connection %T runs no queries", dc)
		}
		rows, err := q.QueryContext(ctx, query, named)
		if err != nil {
			return err
		}
		defer rows.Close()
		return read(rows)
	})
}

// read decodes rows of id, metric, labels and bits.
func (p *tablePart) read(rows driver.Rows, strs int) error {
	dest := make([]driver.Value, 4)
	for {
		if err := rows.Next(dest); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		id, ok0 := dest[0].(int64)
		metric, ok1 := dest[1].(int64)
		blob, ok2 := dest[2].([]byte)
		in, ok3 := dest[3].(int64)
		if !ok0 || !ok1 || !ok2 || !ok3 {
			return fmt.Errorf("series row of %T, %T, %T, %T: want integers and a blob", dest[0], dest[1], dest[2], dest[3])
		}
		if metric <= 0 || metric >= int64(strs) {
			return fmt.Errorf("series %d: no string %d", id, metric)
		}
		r := timeline.SeriesRow{ID: id, Metric: uint32(metric), In: uint8(in), Start: uint32(p.pairs.n)}
		if err := decodePairs(&p.pairs, blob, strs); err != nil {
			return fmt.Errorf("series %d: %w", id, err)
		}
		r.End = uint32(p.pairs.n)
		p.rows.add(r)
	}
}

// decodePairs adds the ids of a labels blob (uvarint name and value ids)
// to pairs, each checked against the dictionary's size.
func decodePairs(pairs *chunks[uint32], blob []byte, strs int) error {
	n := 0
	for rest := blob; len(rest) > 0; n++ {
		x, k := binary.Uvarint(rest)
		if k <= 0 {
			return errors.New("bad labels")
		}
		if x == 0 || x >= uint64(strs) {
			return fmt.Errorf("no string %d", x)
		}
		pairs.add(uint32(x))
		rest = rest[k:]
	}
	if n%2 != 0 {
		return errors.New("bad labels: a name without a value")
	}
	return nil
}
