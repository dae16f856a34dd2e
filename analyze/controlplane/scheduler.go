package controlplane

import "time"

// scheduler is the binds (pods/binding creates) per second: their total,
// peak (the earliest second on a tie) and mean over the seconds with any;
// nil when there were none.
func scheduler(classes []*Class) *Scheduler {
	secs := map[int64]int64{}
	for _, c := range classes {
		if c.Verb == "create" && c.Resource == "pods" && c.Subresource == "binding" {
			for _, x := range c.series {
				secs[x.Sec] += x.Count
			}
		}
	}
	if len(secs) == 0 {
		return nil
	}
	s := &Scheduler{}
	for t, n := range secs {
		s.Binds += n
		if float64(n) > s.PeakPerSec || (float64(n) == s.PeakPerSec && time.Unix(t, 0).Before(s.PeakAt)) {
			s.PeakPerSec, s.PeakAt = float64(n), time.Unix(t, 0).UTC()
		}
	}
	s.ActiveSpanS = float64(len(secs))
	s.MeanPerSec = round(float64(s.Binds) / s.ActiveSpanS)
	return s
}
