package docs

import (
	"strings"
	"testing"
)

// The terms the reports use must each have an entry.
func TestGlossaryHasTheReportsTerms(t *testing.T) {
	for _, term := range []string{"slice", "unit", "coverage", "precision", "counterexample", "episode", "confidence",
		"verdict", "suspect", "first bad", "last good", "last-good", "cascade", "Jaccard", "unknown", "apf", "fix apf", `"fix-apf"`} {
		got, ok := Lookup(term)
		if !ok {
			t.Errorf("no entry for %q", term)
			continue
		}
		if len(got.Text) < 100 {
			t.Errorf("%q: the entry %q is too short: %q", term, got.Name, got.Text)
		}
	}
	if _, ok := Lookup("sliced"); ok {
		t.Errorf("Lookup(sliced) found an entry")
	}
}

func TestGlossaryEntriesAreDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, term := range Glossary() {
		for _, n := range append([]string{term.Name}, term.Aliases...) {
			k := normalize(n)
			if prev, ok := seen[k]; ok {
				t.Errorf("%q names both %q and %q", n, prev, term.Name)
			}
			seen[k] = term.Name
		}
		if strings.Contains(term.Text, "\n## ") {
			t.Errorf("%q runs into another entry", term.Name)
		}
	}
}
