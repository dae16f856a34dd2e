package controlplane

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
	return append([]SecondCount(nil), c.series...)
}
