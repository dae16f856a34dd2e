package slice

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// pods builds a unit-level cube: one leaf per pod, Bad 0 or 1, Total 1.
func pods(n int, bad func(job, pool, digest, cm string, i int) bool) *Cube {
	c := &Cube{Dims: []string{"job", "node.pool", "image.digest", "cm.hash"}}
	for i := range n {
		job := fmt.Sprintf("job-%d", i%8)
		pool := fmt.Sprintf("pool-%d", i%3)
		digest := fmt.Sprintf("sha256:%d", (i/8)%2)
		cm := ""
		if i%8 < 6 { // jobs 6 and 7 mount no ConfigMap
			cm = fmt.Sprintf("cm-%d", i%5)
		}
		l := Leaf{Values: []string{job, pool, digest, cm}, Total: 1}
		if bad(job, pool, digest, cm, i) {
			l.Bad = 1
		}
		c.Leaves = append(c.Leaves, l)
	}
	return c
}

func TestSearchPods(t *testing.T) {
	approx := cmpopts.EquateApprox(0, 1e-9)
	ignoreScore := cmpopts.IgnoreFields(Cause{}, "Score")
	tests := []struct {
		name string
		cube *Cube
		want []Cause
	}{
		{
			// 30 of 30 pods of job-3 fail; 2 noise failures elsewhere.
			name: "one job and noise",
			cube: pods(240, func(job, _, _, _ string, i int) bool {
				return job == "job-3" || i == 17 || i == 130
			}),
			want: []Cause{{Where: Element{"job": "job-3"}, Bad: 30, Total: 30, Coverage: 30.0 / 32, Precision: 1}},
		},
		{
			// A node pool fails most of its pods, across every job.
			name: "one pool",
			cube: pods(240, func(_, pool, _, _ string, i int) bool {
				return pool == "pool-1" && i%10 != 0 || i == 2
			}),
			want: []Cause{{Where: Element{"node.pool": "pool-1"}, Bad: 72, Total: 80, Coverage: 72.0 / 73, Precision: 72.0 / 80}},
		},
		{
			// Only job-2's pods on the new image fail: the conjunction.
			name: "job and image",
			cube: pods(320, func(job, _, digest, _ string, i int) bool {
				return job == "job-2" && digest == "sha256:1" || i == 5
			}),
			want: []Cause{{Where: Element{"job": "job-2", "image.digest": "sha256:1"}, Bad: 20, Total: 20, Coverage: 20.0 / 21, Precision: 1}},
		},
		{
			// Two independent causes.
			name: "two jobs",
			cube: pods(240, func(job, _, _, _ string, _ int) bool {
				return job == "job-1" || job == "job-6"
			}),
			want: []Cause{
				{Where: Element{"job": "job-1"}, Bad: 30, Total: 30, Coverage: 0.5, Precision: 1},
				{Where: Element{"job": "job-6"}, Bad: 30, Total: 30, Coverage: 0.5, Precision: 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Search(context.Background(), tt.cube, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, res.Causes, approx, ignoreScore); diff != "" {
				t.Errorf("causes (-want +got)\n%s", diff)
			}
		})
	}
}

// TestSearchNeverNamesAbsentValues guards against reporting "cm.hash=" when
// the failing pods are exactly those without a ConfigMap.
func TestSearchNeverNamesAbsentValues(t *testing.T) {
	c := pods(240, func(_, _, _, cm string, _ int) bool { return cm == "" })
	res, err := Search(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Causes) == 0 {
		t.Fatal("no cause found")
	}
	for _, cause := range res.Causes {
		for d, v := range cause.Where {
			if v == "" {
				t.Errorf("cause %v names absent %s", cause.Where, d)
			}
		}
	}
}

func TestSearchVolume(t *testing.T) {
	// isp=A drops to half its forecast in every province; isp=A alone
	// explains it, so no conjunction with province may be reported.
	c := &Cube{Dims: []string{"isp", "province"}, Measure: Volume}
	for i, isp := range []string{"A", "B", "C"} {
		for j := range 10 {
			f := float64(100 + 10*j + i)
			o := f + float64((j*7+i*3)%5-2) // +-2 of noise
			if isp == "A" {
				o = f / 2
			}
			c.Leaves = append(c.Leaves, Leaf{Values: []string{isp, fmt.Sprint("p", j)}, Bad: o, Expected: f})
		}
	}
	res, err := Search(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cause := range res.Causes {
		got = append(got, cause.Where.String())
	}
	if diff := cmp.Diff([]string{"isp=A"}, got); diff != "" {
		t.Errorf("causes (-want +got)\n%s", diff)
	}
	if p := res.Causes[0].Precision; p != 1 {
		t.Errorf("precision %v, want 1", p)
	}
}

// TestSearchDeterministic shuffles the leaves: the result must not change.
func TestSearchDeterministic(t *testing.T) {
	c := pods(240, func(job, pool, _, _ string, i int) bool {
		return job == "job-4" && pool == "pool-0" || job == "job-5" && pool == "pool-2" || i%37 == 0
	})
	want, err := Search(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rev := &Cube{Dims: c.Dims}
	for i := len(c.Leaves) - 1; i >= 0; i-- {
		rev.Leaves = append(rev.Leaves, c.Leaves[i])
	}
	got, err := Search(context.Background(), rev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("reversed leaves (-first +reversed)\n%s", diff)
	}
}

func TestSearchErrors(t *testing.T) {
	tests := []struct {
		name string
		cube *Cube
		opt  Options
		want string
	}{
		{"nil", nil, Options{}, "slice search: nil cube"},
		{"misaligned", &Cube{Dims: []string{"a"}, Leaves: []Leaf{{Values: []string{"x", "y"}}}}, Options{}, "slice search: leaf 0: 2 values for 1 dimensions"},
		{"bad over total", &Cube{Dims: []string{"a"}, Leaves: []Leaf{{Values: []string{"x"}, Bad: 2, Total: 1}}}, Options{}, "slice search: leaf 0: bad 2 exceeds total 1"},
		{"duplicate dim", &Cube{Dims: []string{"a", "a"}}, Options{}, `slice search: dimension "a" appears twice`},
		{"negative option", &Cube{Dims: []string{"a"}}, Options{MaxLayer: -1}, "slice search: negative option (MaxLayer -1, MaxCauses 0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Search(context.Background(), tt.cube, tt.opt)
			got := "<nil>"
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got)\n%s", diff)
			}
		})
	}
}

func TestSearchCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Search(ctx, pods(50, func(string, string, string, string, int) bool { return true }), Options{})
	if err == nil {
		t.Fatal("want an error from a cancelled context")
	}
}
