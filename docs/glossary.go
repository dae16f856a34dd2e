// Package docs embeds the documents the binary prints: the glossary that
// faultline explain reads.
package docs

import (
	_ "embed"
	"strings"
)

//go:embed glossary.md
var glossary string

// Term is one glossary entry: its name, its other names and its text.
type Term struct {
	Name    string
	Aliases []string
	Text    string
}

// Glossary returns the entries of glossary.md, in the file's order: each
// "## NAME / ALIAS / ..." heading and the text up to the next heading.
func Glossary() []Term {
	var terms []Term
	for _, sec := range strings.Split(glossary, "\n## ")[1:] {
		head, body, _ := strings.Cut(sec, "\n")
		names := strings.Split(head, " / ")
		for i := range names {
			names[i] = strings.TrimSpace(names[i])
		}
		terms = append(terms, Term{Name: names[0], Aliases: names[1:], Text: strings.TrimSpace(body)})
	}
	return terms
}

// Lookup finds a term by its name or one of its aliases, ignoring case,
// quotes and the difference between spaces, dashes and underscores.
func Lookup(name string) (Term, bool) {
	key := normalize(name)
	for _, t := range Glossary() {
		if normalize(t.Name) == key {
			return t, true
		}
		for _, a := range t.Aliases {
			if normalize(a) == key {
				return t, true
			}
		}
	}
	return Term{}, false
}

func normalize(s string) string {
	s = strings.ToLower(strings.Trim(strings.TrimSpace(s), `"'`))
	return strings.NewReplacer("-", " ", "_", " ").Replace(s)
}
