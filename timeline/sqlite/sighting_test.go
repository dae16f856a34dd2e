package sqlite

import (
	"testing"

	"github.com/faultline/faultline/timeline"
)

func TestEarlierSighting(t *testing.T) {
	for _, c := range []struct {
		name         string
		seen, heldS  timeline.Sighting
		t, heldT     int64
		h, heldH     string
		want, backTo bool // backTo: the held one would replace this one
	}{
		{name: "a write beats a read seen earlier", seen: timeline.SeenWritten, heldS: timeline.SeenRead, t: 9, heldT: 2, want: true, h: "b", heldH: "a"},
		{name: "a read beats metadata seen earlier", seen: timeline.SeenRead, heldS: timeline.SeenInferred, t: 9, heldT: 2, want: true, h: "b", heldH: "a"},
		{name: "earlier wins", t: 1, heldT: 2, h: "b", heldH: "a", want: true},
		{name: "later loses", t: 3, heldT: 2, h: "a", heldH: "b", want: false, backTo: true},
		{name: "a known time beats none", t: 5, heldT: noTime, h: "b", heldH: "a", want: true},
		{name: "none loses to a known time", t: noTime, heldT: 5, h: "a", heldH: "b", want: false, backTo: true},
		{name: "a tie keeps the smaller hash", t: 5, heldT: 5, h: "a", heldH: "b", want: true},
		{name: "no time on both keeps the smaller hash", t: noTime, heldT: noTime, h: "a", heldH: "b", want: true},
		{name: "the same sighting twice changes nothing", t: 5, heldT: 5, h: "a", heldH: "a", want: false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, held := sighting{c.seen, c.t, c.h}, sighting{c.heldS, c.heldT, c.heldH}
			if got := s.better(held); got != c.want {
				t.Errorf("better = %v, want %v", got, c.want)
			}
			if got := held.better(s); got != c.backTo {
				t.Errorf("the other way round = %v, want %v", got, c.backTo)
			}
		})
	}
}
