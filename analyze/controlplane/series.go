package controlplane

import "sort"

// SecondCount is a class's request count in one second.
type SecondCount struct {
	Sec   int64 // Unix seconds
	Count int64
}

// Series returns the class's per-second request counts (as
// timeline.RequestSecond counts them), oldest first; seconds without a
// request are left out. It is not part of the JSON contract: it is for
// drawing rates (the TUI's sparklines).
func (c *Class) Series() []SecondCount {
	out := make([]SecondCount, 0, len(c.seconds))
	for sec, n := range c.seconds {
		out = append(out, SecondCount{Sec: sec, Count: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Sec < out[j].Sec })
	return out
}
