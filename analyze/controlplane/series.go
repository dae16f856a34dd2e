package controlplane

import "github.com/faultline/faultline/analyze/burst"

// SecondCount is a class's request count in one second (Sec, Unix
// seconds, and Count): the burst detector's input.
type SecondCount = burst.Second

// Series returns the class's per-second request counts (as
// timeline.RequestSecond counts them), oldest first; seconds without a
// request are left out. It is not part of the JSON contract: it is for
// drawing rates (the TUI's sparklines).
func (c *Class) Series() []SecondCount {
	return append([]SecondCount(nil), c.series...)
}
