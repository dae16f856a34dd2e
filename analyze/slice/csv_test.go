package slice

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var (
	rsOpt      = CSVOptions{Time: "min", Bad: "value", Total: "cnt", At: 180}
	squeezeOpt = CSVOptions{Value: "real", Baseline: "predict"}
	unitOpt    = CSVOptions{Bad: "bad", Total: "total"}
)

const rsSample = `min,cdn,bitrate,p2p,value,cnt
60,5,500,1,1,100
60,3,500,0,0,10
120,5,500,1,3,100
120,5,2000,1,0,50
180,5,500,1,40,100
180,3,500,0,0,10
180,5,2000,1,1,50
180,5,500,1,10,100
240,5,500,1,0,100
`

const squeezeSample = `logstream_idc,logstream_province,logstream_isp,cmatch,real,predict
gzhxy,None,ALIBABA,201,0.0,10.5
gzhxy,None,CMNET,201,12.0,11.0
`

func TestLoadCSV(t *testing.T) {
	tests := []struct {
		name string
		in   string
		opt  CSVOptions
		want *Cube
	}{
		{
			name: "robustspot",
			in:   rsSample,
			opt:  rsOpt,
			// History 60 and 120: 4 bad of 260 over 4 leaf-steps, so the
			// prior weighs 65 at rate 4/260 (1 bad). Leaf (5,500,1):
			// (4 + 1)/(200 + 65).
			want: &Cube{
				Dims:     []string{"cdn", "bitrate", "p2p"},
				Baseline: true,
				Leaves: []Leaf{
					{Values: []string{"5", "500", "1"}, Bad: 50, Total: 200, Expected: 200 * (4 + 1) / 265.0},
					{Values: []string{"3", "500", "0"}, Bad: 0, Total: 10, Expected: 10 * 1 / 75.0},
					{Values: []string{"5", "2000", "1"}, Bad: 1, Total: 50, Expected: 50 * 1 / 115.0},
				},
			},
		},
		{
			name: "robustspot one step of history",
			in:   rsSample,
			opt:  CSVOptions{Time: "min", Bad: "value", Total: "cnt", At: 180, History: 1},
			// History 120 only: 3 bad of 150 over 2 leaf-steps, weight 75.
			want: &Cube{
				Dims:     []string{"cdn", "bitrate", "p2p"},
				Baseline: true,
				Leaves: []Leaf{
					{Values: []string{"5", "500", "1"}, Bad: 50, Total: 200, Expected: 200 * (3 + 75*0.02) / 175},
					{Values: []string{"3", "500", "0"}, Bad: 0, Total: 10, Expected: 10 * 0.02},
					{Values: []string{"5", "2000", "1"}, Bad: 1, Total: 50, Expected: 50 * (0 + 75*0.02) / 125},
				},
			},
		},
		{
			name: "squeeze",
			in:   squeezeSample,
			opt:  squeezeOpt,
			want: &Cube{
				Dims:    []string{"logstream_idc", "logstream_province", "logstream_isp", "cmatch"},
				Measure: Volume,
				Leaves: []Leaf{
					{Values: []string{"gzhxy", "None", "ALIBABA", "201"}, Bad: 0, Expected: 10.5},
					{Values: []string{"gzhxy", "None", "CMNET", "201"}, Bad: 12, Expected: 11},
				},
			},
		},
		{
			name: "units with absent values",
			in:   "pod,job,cm,bad,total\np1,a,,1,1\np2,a,x,0,1\n",
			opt:  unitOpt,
			want: &Cube{
				Dims: []string{"pod", "job", "cm"},
				Leaves: []Leaf{
					{Values: []string{"p1", "a", ""}, Bad: 1, Total: 1},
					{Values: []string{"p2", "a", "x"}, Bad: 0, Total: 1},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadCSV(strings.NewReader(tt.in), "in.csv", tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("cube (-want +got)\n%s", diff)
			}
		})
	}
}

func TestLoadCSVErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		opt  CSVOptions
		want string
	}{
		{"not a number", "min,cdn,value,cnt\n180,1,1,10\n180,2,1,abc\n", rsOpt, `case1.csv:3: column "cnt": "abc" is not a number`},
		{"negative", "a,real,predict\nx,-1,2\n", squeezeOpt, `case1.csv:2: column "real": -1 is negative`},
		{"bad over total", "a,bad,total\nx,3,2\n", unitOpt, `case1.csv:2: column "bad": 3 exceeds column "total": 2`},
		{"bad time", "min,cdn,value,cnt\n18x,1,1,10\n", rsOpt, `case1.csv:2: column "min": "18x" is not an integer time`},
		{"missing column", "min,cdn,value\n", rsOpt, `case1.csv:1: no column "cnt" (have min,cdn,value)`},
		{"duplicate column", "a,a,real,predict\n", squeezeOpt, `case1.csv:1: column "a" appears twice`},
		{"empty file", "", squeezeOpt, "case1.csv: empty file, want a header row"},
		{"short row", "a,real,predict\nx,1\n", squeezeOpt, "case1.csv:2:1: wrong number of fields"},
		{"no step", "min,cdn,value,cnt\n60,1,1,10\n", rsOpt, "case1.csv: no rows at min = 180"},
		{"no columns named", "a\n", CSVOptions{}, "case1.csv: want value and baseline columns, or bad and total columns"},
		{"half volume", "a\n", CSVOptions{Value: "real"}, "case1.csv: want both a value and a baseline column"},
		{"same column twice", "a\n", CSVOptions{Bad: "x", Total: "x"}, `case1.csv: column "x" named for two measures`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadCSV(strings.NewReader(tt.in), "case1.csv", tt.opt)
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

// FuzzLoadCSV checks that no input makes the loader or the search panic,
// and that every cube the loader accepts is valid.
func FuzzLoadCSV(f *testing.F) {
	f.Add(rsSample, 0)
	f.Add(squeezeSample, 1)
	f.Add("pod,job,cm,bad,total\np1,a,,1,1\np2,a,x,0,1\n", 2)
	f.Add("min,cdn,value,cnt\n180,\"1\n2\",1,10\n", 0)
	f.Add("a,real,predict\nx,NaN,Inf\n", 1)
	f.Fuzz(func(t *testing.T, in string, layout int) {
		opt := []CSVOptions{rsOpt, squeezeOpt, unitOpt}[uint(layout)%3]
		c, err := LoadCSV(strings.NewReader(in), "fuzz.csv", opt)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("loaded an invalid cube: %v", err)
		}
		if len(c.Dims) > MaxDims {
			return
		}
		if _, err := Search(context.Background(), c, Options{}); err != nil {
			t.Fatalf("search of a loaded cube: %v", err)
		}
	})
}
