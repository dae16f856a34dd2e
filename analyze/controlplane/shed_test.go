package controlplane

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A client shed (429) with no burst of its own is listed, its every class
// counted toward its rate; a client shed in its own burst is the burst's;
// a client never shed is not listed. The most shed come first.
func TestShedClients(t *testing.T) {
	class := func(client, verb string, codes map[string]int64, secs ...int64) *Class {
		c := &Class{Verb: verb, Client: client, User: "system:serviceaccount:ml:*", Codes: codes}
		for _, s := range secs {
			c.series = append(c.series, SecondCount{Sec: s, Count: 2})
			c.Count += 2
		}
		c.Rate = float64(c.Count) / 100
		return c
	}
	scorer := class("scorer", "list", map[string]int64{"200": 4, "429": 2}, 1, 2, 3)
	scorerGets := class("scorer", "get", map[string]int64{"200": 2}, 2)
	storm := class("storm", "list", map[string]int64{"200": 1, "429": 9}, 4, 5)
	cache := class("cache", "list", map[string]int64{"200": 2}, 1)
	quiet := class("quiet", "get", map[string]int64{"200": 1, "429": 1}, 7)
	got := shedClients([]*Class{scorer, scorerGets, storm, cache, quiet}, []Burst{{Class: *storm}})
	want := []Shed{
		{Client: "scorer", User: "system:serviceaccount:ml:*", Throttled: 2, Requests: 8, Rate: 0.08, PeakRps: 4},
		{Client: "quiet", User: "system:serviceaccount:ml:*", Throttled: 1, Requests: 2, Rate: 0.02, PeakRps: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shed (-want +got)\n%s", diff)
	}
}
