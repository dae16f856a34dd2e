package controlplane

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/timelinetest"
)

var r0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func sec(s float64) time.Time { return r0.Add(time.Duration(s * float64(time.Second))) }

// informers are n watches the apiserver's loopback client opens from s.
func informers(s float64, n int) []*timeline.Record {
	var out []*timeline.Record
	for i := range n {
		out = append(out, &timeline.Record{Time: sec(s + float64(i)*0.01), User: "system:apiserver", Verb: "watch",
			Object: timeline.ObjectRef{Resource: fmt.Sprintf("resource%d", i)}})
	}
	return out
}

// traffic is a lease renewal every 100 ms in [from, to).
func traffic(from, to float64) []*timeline.Record {
	var out []*timeline.Record
	for s := from; s < to; s += 0.1 {
		out = append(out, &timeline.Record{Time: sec(s), User: "kwok", Verb: "update", Object: timeline.ObjectRef{Resource: "leases"}})
	}
	return out
}

func join(parts ...[]*timeline.Record) *timelinetest.Mem {
	m := &timelinetest.Mem{}
	for _, p := range parts {
		m.Add(p...)
	}
	return m
}

func TestRestarts(t *testing.T) {
	type brief struct {
		LastServed, Up float64
		Informers      int
	}
	tests := []struct {
		name string
		rs   *timelinetest.Mem
		want []brief
	}{
		{"the first start is where the evidence begins", join(informers(0, 30), traffic(0.5, 60)), nil},
		{"a silence, then a start", join(informers(0, 30), traffic(0.5, 60), traffic(70, 80), informers(71, 30)),
			[]brief{{59.9, 70, 30}}},
		{"no silence: another replica served on", join(informers(0, 30), traffic(0.5, 80), informers(40, 30)),
			[]brief{{39.9, 40, 30}}},
		{"a few informers re-opening their watches is no start", join(informers(0, 30), traffic(0.5, 80), informers(40, 3)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Restarts(context.Background(), tt.rs, sec(0), sec(100))
			if err != nil {
				t.Fatal(err)
			}
			var briefs []brief
			for _, r := range got {
				briefs = append(briefs, brief{float64(r.LastServed.Sub(r0).Round(100*time.Millisecond)) / 1e9, float64(r.Up.Sub(r0).Round(100*time.Millisecond)) / 1e9, r.Informers})
			}
			if diff := cmp.Diff(tt.want, briefs); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
