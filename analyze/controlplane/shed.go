package controlplane

import "sort"

// Shed is a client whose requests the apiserver rejected (429) with no
// burst of its own in the window: rejections not of its own making. Its
// priority level was made too small for it, or someone else's load fills
// the level it shares. A client shed in its own burst is that burst's
// (Bursts), and is not listed here.
type Shed struct {
	Client    string `json:"client"`
	User      string `json:"user"`
	Throttled int64  `json:"throttled"`
	Requests  int64  `json:"requests"`
	// Rate is its mean rate over the window, PeakRps its busiest second:
	// a client shed at a flat rate has the two close.
	Rate    float64 `json:"rate"`
	PeakRps float64 `json:"peakRps"`
}

// shedClients sums, per client (user agent and user), the 429s of its
// classes, and keeps the clients shed that no burst is of; the most shed
// first.
func shedClients(classes []*Class, bursts []Burst) []Shed {
	key := func(c *Class) string { return c.Client + "\x00" + c.User }
	bursting := map[string]bool{}
	for i := range bursts {
		bursting[key(&bursts[i].Class)] = true
	}
	by := map[string]*Shed{}
	peak := map[string]map[int64]int64{}
	for _, c := range classes {
		k := key(c)
		if c.Codes["429"] == 0 || bursting[k] {
			continue
		}
		if by[k] == nil {
			by[k], peak[k] = &Shed{Client: c.Client, User: c.User}, map[int64]int64{}
		}
		by[k].Throttled += c.Codes["429"]
	}
	// Every class of a shed client counts toward its rate, shed or not.
	for _, c := range classes {
		k := key(c)
		sh := by[k]
		if sh == nil {
			continue
		}
		sh.Requests += c.Count
		sh.Rate += c.Rate
		for _, x := range c.series {
			peak[k][x.Sec] += x.Count
		}
	}
	out := []Shed{}
	for k, sh := range by {
		for _, n := range peak[k] {
			sh.PeakRps = max(sh.PeakRps, float64(n))
		}
		sh.Rate = round(sh.Rate)
		out = append(out, *sh)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Throttled != out[j].Throttled {
			return out[i].Throttled > out[j].Throttled
		}
		return out[i].Client+"\x00"+out[i].User < out[j].Client+"\x00"+out[j].User
	})
	return out
}
