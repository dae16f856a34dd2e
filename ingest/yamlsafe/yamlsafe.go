// Package yamlsafe converts untrusted YAML documents to JSON with a bound on
// what aliases expand to.
//
// The YAML library's billion-laughs guard counts aliases: it stops a tree of
// small nodes aliased into an exponential one. It does not weigh what an
// alias copies, so one 2 MB scalar aliased 600 times expands to 1.2 GB of
// JSON and takes the process down, with only 600 aliases. ToJSON therefore
// counts bytes: it sizes the document's tree once, each anchored node at its
// expanded size, and refuses the document when its aliases would copy more
// than MaxAliasedBytes (or more than the document itself, whichever is
// larger) before any of it is expanded.
package yamlsafe

import (
	"bytes"
	"fmt"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// MaxAliasedBytes is the expansion that any document may reach through
// aliases, whatever its own size: far beyond what anchors in Kubernetes
// manifests or CI files copy, far below what hurts.
const MaxAliasedBytes = 16 << 20

// ExpansionError is a document whose aliases expand past the bound.
type ExpansionError struct {
	Aliased int64 // bytes the aliases would copy (at least)
	Limit   int64
}

func (e *ExpansionError) Error() string {
	return fmt.Sprintf("aliases expand to over %d bytes (the limit is %d): refused, a YAML alias bomb", e.Aliased, e.Limit)
}

// ToJSON converts one YAML document to JSON, as sigs.k8s.io/yaml does,
// after checking that its aliases do not expand past the bound.
func ToJSON(doc []byte) ([]byte, error) {
	if err := CheckExpansion(doc); err != nil {
		return nil, err
	}
	return yaml.YAMLToJSON(doc)
}

// CheckExpansion returns an *ExpansionError for a document whose aliases
// copy more than max(MaxAliasedBytes, len(doc)) bytes. A document without
// an alias, or that does not parse (the converter reports that), passes.
func CheckExpansion(doc []byte) error {
	if bytes.IndexByte(doc, '*') < 0 {
		return nil // no alias: nothing expands
	}
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(doc, &root); err != nil {
		return nil
	}
	limit := max(int64(MaxAliasedBytes), int64(len(doc)))
	s := sizer{memo: map[*yamlv3.Node]int64{}, limit: limit}
	s.size(&root)
	if s.aliased > limit {
		return &ExpansionError{Aliased: s.aliased, Limit: limit}
	}
	return nil
}

// sizer computes expanded sizes, each node once (anchors are shared), and
// sums what aliases copy. Sizes saturate just above the limit: nesting
// aliases multiplies them, and they must not overflow.
type sizer struct {
	memo    map[*yamlv3.Node]int64
	aliased int64
	limit   int64
}

func (s *sizer) size(n *yamlv3.Node) int64 {
	if n == nil {
		return 0
	}
	if v, ok := s.memo[n]; ok {
		return v
	}
	s.memo[n] = 0 // a cycle (not valid YAML, but) adds nothing
	var v int64
	switch n.Kind {
	case yamlv3.AliasNode:
		v = s.size(n.Alias)
		s.aliased = s.sat(s.aliased + v)
	case yamlv3.ScalarNode:
		v = int64(len(n.Value)) + 2 // quotes, separator
	default:
		v = 2
		for _, c := range n.Content {
			v = s.sat(v + s.size(c))
		}
	}
	if n.Kind != yamlv3.AliasNode {
		s.memo[n] = v
	} else {
		delete(s.memo, n) // each alias is its own copy
	}
	return v
}

func (s *sizer) sat(v int64) int64 {
	if v > s.limit+1 || v < 0 {
		return s.limit + 1
	}
	return v
}
