package yamlsafe

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// scalarBomb is one big scalar aliased n times: few aliases, huge output.
func scalarBomb(size, n int) string {
	var b strings.Builder
	b.WriteString("big: &big " + strings.Repeat("x", size) + "\ncopies:\n")
	for range n {
		b.WriteString("- *big\n")
	}
	return b.String()
}

// laughs is the classic billion laughs, depth levels of ten.
func laughs(depth int) string {
	var b strings.Builder
	b.WriteString(`a0: &a0 ["lol"]` + "\n")
	for i := 1; i <= depth; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// TestAliasExpansionIsBounded: the library's guard counts aliases, not the
// bytes they copy, so a 2 MB scalar aliased 600 times (1.2 GB of JSON)
// crashed both YAML ingesters. Each case says whether the document passes.
func TestAliasExpansionIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		doc    string
		refuse bool
	}{
		{"2 MB scalar aliased 600 times", scalarBomb(2<<20, 600), true},
		{"billion laughs", laughs(9), true},
		{"nested aliases just past the bound", scalarBomb(1<<20, 17), true},
		{"anchors as manifests use them", "base: &base {image: trainer:1, cpu: 2}\na: *base\nb: *base\nc: {<<: *base, cpu: 4}\n", false},
		{"a big scalar aliased a few times", scalarBomb(1<<20, 8), false},
		{"no alias at all", "a: 1\nb: [x, y]\n", false},
		{"an asterisk that is no alias", "a: '*'\nb: \"2*3\"\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ToJSON([]byte(tc.doc))
			var ee *ExpansionError
			if got := errors.As(err, &ee); got != tc.refuse {
				t.Fatalf("refused %v (err %v), want %v", got, err, tc.refuse)
			}
			if tc.refuse && (ee.Aliased <= ee.Limit || !strings.Contains(err.Error(), "alias bomb")) {
				t.Errorf("error %v", err)
			}
			if !tc.refuse && err != nil {
				t.Errorf("a fair document failed: %v", err)
			}
		})
	}
}

// FuzzToJSON: no document panics the check or the conversion, and none
// that passes the check expands past the bound.
func FuzzToJSON(f *testing.F) {
	f.Add([]byte("a: &a [1, 2]\nb: *a\n"))
	f.Add([]byte(laughs(3)))
	f.Add([]byte(scalarBomb(100, 5)))
	f.Add([]byte("base: &base {image: trainer:1}\nc: {<<: *base, cpu: 4}\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		js, err := ToJSON(doc)
		if err != nil {
			return
		}
		if limit := max(MaxAliasedBytes, len(doc)); len(js) > 2*limit+2*len(doc)+1024 {
			t.Fatalf("%d bytes of YAML passed the check and expanded to %d bytes of JSON", len(doc), len(js))
		}
	})
}
