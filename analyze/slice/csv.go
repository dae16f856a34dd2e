package slice

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// CSVOptions names the measure columns of a cube file; every other column
// is an attribute (a dimension). Three layouts are understood:
//
//   - Value and Baseline: one row per leaf with an observed amount and its
//     forecast (Squeeze, RiskLoc): a Volume cube.
//   - Bad and Total: one row per leaf with bad events out of all events
//     (units such as pods, Bad 0 or 1 and Total 1): a Ratio cube without
//     baseline.
//   - Time, Bad, Total and At: rows per leaf per time step (RobustSpot:
//     --time-column min --bad value --total cnt). The leaves are those of
//     the step At; each one's expected bad count is its failure rate over
//     the earlier steps times its total at At: a Ratio cube with baseline.
type CSVOptions struct {
	Value, Baseline  string
	Time, Bad, Total string
	// At is the time step under investigation, in the unit of the Time
	// column (RobustSpot: Unix seconds).
	At int64
	// History is how many time steps before At form the baseline; 0 means
	// all of them.
	History int
}

// LoadCSV reads a cube from a CSV file with a header row. name is used in
// error messages only ("case1.csv:17: column "cnt": "abc" is not a number").
// Rows with the same attribute values are summed into one leaf; an empty
// attribute value means the leaf lacks that attribute.
func LoadCSV(r io.Reader, name string, opt CSVOptions) (*Cube, error) {
	measures, err := opt.columns()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	l, err := newCubeLoader(cr, name, opt, measures)
	if err != nil {
		return nil, err
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		line, _ := cr.FieldPos(0)
		if err := l.row(rec, line); err != nil {
			return nil, err
		}
	}
	c := l.c
	if c.Baseline {
		if len(c.Leaves) == 0 {
			return nil, fmt.Errorf("%s: no rows at %s = %d", name, opt.Time, opt.At)
		}
		setBaseline(c, l.leafOf, l.history, opt.History)
	}
	return c, nil
}

// cubeLoader builds a Cube from a CSV file's rows, one at a time.
type cubeLoader struct {
	name    string
	opt     CSVOptions
	c       *Cube
	col     map[string]int               // column name -> index
	attrs   []int                        // the attribute columns
	leafOf  map[string]int               // leaf key -> index in c.Leaves
	history map[string]map[int64]stepSum // leaf key -> time step -> sums
	key     strings.Builder
}

// newCubeLoader reads the header row: every column named once, every
// measure present; the other columns are the cube's dimensions.
func newCubeLoader(cr *csv.Reader, name string, opt CSVOptions, measures []string) (*cubeLoader, error) {
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file, want a header row", name)
		}
		return nil, csvError(name, err)
	}
	header = slices.Clone(header)
	l := &cubeLoader{name: name, opt: opt, c: &Cube{}, col: map[string]int{},
		leafOf: map[string]int{}, history: map[string]map[int64]stepSum{}}
	for i, h := range header {
		if h == "" {
			return nil, fmt.Errorf("%s:1: column %d has no name", name, i+1)
		}
		if _, dup := l.col[h]; dup {
			return nil, fmt.Errorf("%s:1: column %q appears twice", name, h)
		}
		l.col[h] = i
		if !slices.Contains(measures, h) {
			l.attrs = append(l.attrs, i)
		}
	}
	for _, m := range measures {
		if _, ok := l.col[m]; !ok {
			return nil, fmt.Errorf("%s:1: no column %q (have %s)", name, m, strings.Join(header, ","))
		}
	}
	for _, i := range l.attrs {
		l.c.Dims = append(l.c.Dims, header[i])
	}
	switch {
	case opt.Value != "":
		l.c.Measure = Volume
	case opt.Time != "":
		l.c.Baseline = true
	}
	return l, nil
}

// row adds one row (line of the file): to its leaf, or, for an earlier
// time step, to its leaf's history; rows of later steps are skipped.
func (l *cubeLoader) row(rec []string, line int) error {
	l.key.Reset()
	for _, i := range l.attrs {
		l.key.WriteString(strconv.Quote(rec[i]))
	}
	k := l.key.String()
	leaf, err := l.measures(rec, line)
	if err != nil {
		return err
	}
	if l.c.Baseline {
		v := rec[l.col[l.opt.Time]]
		t, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return fmt.Errorf("%s:%d: column %q: %q is not an integer time", l.name, line, l.opt.Time, v)
		}
		if t != l.opt.At {
			if t < l.opt.At {
				l.addHistory(k, t, leaf)
			}
			return nil
		}
	}
	i, ok := l.leafOf[k]
	if !ok {
		i = len(l.c.Leaves)
		l.leafOf[k] = i
		vals := make([]string, len(l.attrs))
		for j, a := range l.attrs {
			vals[j] = rec[a]
		}
		l.c.Leaves = append(l.c.Leaves, Leaf{Values: vals})
	}
	x := &l.c.Leaves[i]
	x.Bad += leaf.Bad
	x.Total += leaf.Total
	x.Expected += leaf.Expected
	return nil
}

// measures reads a row's measures: value and baseline (a Volume cube), or
// bad and total (bad no more than total).
func (l *cubeLoader) measures(rec []string, line int) (Leaf, error) {
	var leaf Leaf
	var err error
	if l.c.Measure == Volume {
		if leaf.Bad, err = l.num(rec, line, l.opt.Value); err != nil {
			return leaf, err
		}
		if leaf.Expected, err = l.num(rec, line, l.opt.Baseline); err != nil {
			return leaf, err
		}
		return leaf, nil
	}
	if leaf.Bad, err = l.num(rec, line, l.opt.Bad); err != nil {
		return leaf, err
	}
	if leaf.Total, err = l.num(rec, line, l.opt.Total); err != nil {
		return leaf, err
	}
	if leaf.Bad > leaf.Total {
		return leaf, fmt.Errorf("%s:%d: column %q: %v exceeds column %q: %v", l.name, line, l.opt.Bad, leaf.Bad, l.opt.Total, leaf.Total)
	}
	return leaf, nil
}

// num reads a column of a row as a finite number of 0 or more.
func (l *cubeLoader) num(rec []string, line int, column string) (float64, error) {
	v := rec[l.col[column]]
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s:%d: column %q: %q is not a number", l.name, line, column, v)
	}
	if f < 0 {
		return 0, fmt.Errorf("%s:%d: column %q: %v is negative", l.name, line, column, f)
	}
	return f, nil
}

// addHistory adds a row of an earlier time step t to its leaf's history.
func (l *cubeLoader) addHistory(k string, t int64, leaf Leaf) {
	h := l.history[k]
	if h == nil {
		h = map[int64]stepSum{}
		l.history[k] = h
	}
	x := h[t]
	x.bad += leaf.Bad
	x.total += leaf.Total
	h[t] = x
}

func (o CSVOptions) columns() ([]string, error) {
	var cols []string
	switch {
	case o.Value != "" || o.Baseline != "":
		if o.Value == "" || o.Baseline == "" {
			return nil, errors.New("want both a value and a baseline column")
		}
		if o.Bad != "" || o.Total != "" || o.Time != "" {
			return nil, errors.New("value/baseline columns exclude bad/total/time columns")
		}
		cols = []string{o.Value, o.Baseline}
	case o.Bad != "" && o.Total != "":
		cols = []string{o.Bad, o.Total}
		if o.Time != "" {
			cols = append(cols, o.Time)
		}
	default:
		return nil, errors.New("want value and baseline columns, or bad and total columns")
	}
	if o.History < 0 {
		return nil, fmt.Errorf("history %d is negative", o.History)
	}
	for i, c := range cols {
		if slices.Contains(cols[:i], c) {
			return nil, fmt.Errorf("column %q named for two measures", c)
		}
	}
	return cols, nil
}

func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d:%d: %w", name, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// stepSum sums the rows of one leaf at one time step.
type stepSum struct{ bad, total float64 }

// setBaseline gives every leaf of the step under investigation its
// expected bad count: its failure rate over the last `steps` earlier time
// steps (all when 0), shrunk towards the rate of all leaves over those
// steps with the weight of one average leaf-step, so that a leaf with
// little or no history gets the common rate.
func setBaseline(c *Cube, leafOf map[string]int, history map[string]map[int64]stepSum, steps int) {
	times := map[int64]bool{}
	for _, h := range history {
		for t := range h {
			times[t] = true
		}
	}
	ts := make([]int64, 0, len(times))
	for t := range times {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	if steps > 0 && len(ts) > steps {
		ts = ts[len(ts)-steps:]
	}
	keep := map[int64]bool{}
	for _, t := range ts {
		keep[t] = true
	}
	per := make([]stepSum, len(c.Leaves))
	var bad, total float64
	var n int
	for k, h := range history {
		i, ok := leafOf[k]
		for t, v := range h {
			if !keep[t] {
				continue
			}
			bad += v.bad
			total += v.total
			n++
			if ok {
				per[i].bad += v.bad
				per[i].total += v.total
			}
		}
	}
	rate, weight := 0.0, 0.0
	if total > 0 {
		rate, weight = bad/total, total/float64(n)
	}
	for i := range c.Leaves {
		l := &c.Leaves[i]
		p := rate
		if d := per[i].total + weight; d > 0 {
			p = (per[i].bad + weight*rate) / d
		}
		l.Expected = math.Min(p*l.Total, l.Total)
	}
}
