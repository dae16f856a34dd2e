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
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file, want a header row", name)
		}
		return nil, csvError(name, err)
	}
	header = slices.Clone(header)
	col := map[string]int{}
	var attrs []int
	for i, h := range header {
		if h == "" {
			return nil, fmt.Errorf("%s:1: column %d has no name", name, i+1)
		}
		if _, dup := col[h]; dup {
			return nil, fmt.Errorf("%s:1: column %q appears twice", name, h)
		}
		col[h] = i
		if !slices.Contains(measures, h) {
			attrs = append(attrs, i)
		}
	}
	for _, m := range measures {
		if _, ok := col[m]; !ok {
			return nil, fmt.Errorf("%s:1: no column %q (have %s)", name, m, strings.Join(header, ","))
		}
	}
	c := &Cube{}
	for _, i := range attrs {
		c.Dims = append(c.Dims, header[i])
	}
	switch {
	case opt.Value != "":
		c.Measure = Volume
	case opt.Time != "":
		c.Baseline = true
	}

	leafOf := map[string]int{}
	history := map[string]map[int64]stepSum{} // leaf key -> time step -> sums
	var key strings.Builder
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		line, _ := cr.FieldPos(0)
		num := func(column string) (float64, error) {
			v := rec[col[column]]
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return 0, fmt.Errorf("%s:%d: column %q: %q is not a number", name, line, column, v)
			}
			if f < 0 {
				return 0, fmt.Errorf("%s:%d: column %q: %v is negative", name, line, column, f)
			}
			return f, nil
		}
		key.Reset()
		for _, i := range attrs {
			key.WriteString(strconv.Quote(rec[i]))
		}
		k := key.String()

		var leaf Leaf
		var t int64
		if c.Measure == Volume {
			if leaf.Bad, err = num(opt.Value); err != nil {
				return nil, err
			}
			if leaf.Expected, err = num(opt.Baseline); err != nil {
				return nil, err
			}
		} else {
			if leaf.Bad, err = num(opt.Bad); err != nil {
				return nil, err
			}
			if leaf.Total, err = num(opt.Total); err != nil {
				return nil, err
			}
			if leaf.Bad > leaf.Total {
				return nil, fmt.Errorf("%s:%d: column %q: %v exceeds column %q: %v", name, line, opt.Bad, leaf.Bad, opt.Total, leaf.Total)
			}
		}
		if c.Baseline {
			v := rec[col[opt.Time]]
			if t, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
				return nil, fmt.Errorf("%s:%d: column %q: %q is not an integer time", name, line, opt.Time, v)
			}
			if t != opt.At {
				if t < opt.At {
					h := history[k]
					if h == nil {
						h = map[int64]stepSum{}
						history[k] = h
					}
					x := h[t]
					x.bad += leaf.Bad
					x.total += leaf.Total
					h[t] = x
				}
				continue
			}
		}
		i, ok := leafOf[k]
		if !ok {
			i = len(c.Leaves)
			leafOf[k] = i
			vals := make([]string, len(attrs))
			for j, a := range attrs {
				vals[j] = rec[a]
			}
			c.Leaves = append(c.Leaves, Leaf{Values: vals})
		}
		l := &c.Leaves[i]
		l.Bad += leaf.Bad
		l.Total += leaf.Total
		l.Expected += leaf.Expected
	}
	if c.Baseline {
		if len(c.Leaves) == 0 {
			return nil, fmt.Errorf("%s: no rows at %s = %d", name, opt.Time, opt.At)
		}
		setBaseline(c, leafOf, history, opt.History)
	}
	return c, nil
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
