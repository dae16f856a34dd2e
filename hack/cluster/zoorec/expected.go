package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// Expected is an incident's ground truth, in the fixture format
// (fixtures/README.md), written from the injection itself.
type Expected struct {
	SchemaVersion int       `json:"schemaVersion"`
	Incident      string    `json:"incident"`
	Family        string    `json:"family"`
	Seed          int64     `json:"seed"`
	Control       bool      `json:"control,omitempty"`
	Nodes         int       `json:"nodes"`
	Boundary      *Boundary `json:"boundary,omitempty"`
	Episode
	OtherEpisodes []Episode                  `json:"otherEpisodes,omitempty"`
	Extra         map[string]json.RawMessage `json:"extra,omitempty"`
}

// Episode is the truth of one fault. The main episode's boundary is
// Expected.Boundary (the shallower field wins in JSON); the others carry
// their own.
type Episode struct {
	EpisodeBoundary         *Boundary           `json:"boundary,omitempty"`
	Changes                 []Change            `json:"changes"`
	Decoys                  []Change            `json:"decoys,omitempty"`
	Slice                   map[string]string   `json:"slice,omitempty"`
	SliceEquivalents        []map[string]string `json:"sliceEquivalents,omitempty"`
	Population              map[string]string   `json:"population,omitempty"`
	CounterexampleDiffersIn []string            `json:"counterexampleDiffersIn"`
	Mitigation              []Action            `json:"mitigation,omitempty"`
}

// Boundary is the last instant known good and the first known bad.
type Boundary struct {
	LastGood  time.Time `json:"lastGood"`
	FirstBad  time.Time `json:"firstBad"`
	Tolerance string    `json:"tolerance,omitempty"`
}

// Change is one change to the cluster.
type Change struct {
	Ref       string    `json:"ref"`
	Dimension string    `json:"dimension"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	At        time.Time `json:"at"`
	Actor     *Actor    `json:"actor,omitempty"`
	Selector  string    `json:"selector,omitempty"`
	Objects   []string  `json:"objects,omitempty"`
}

// Action is one mitigation step that would have worked.
type Action struct {
	Action  string   `json:"action"`
	Target  string   `json:"target"`
	To      string   `json:"to,omitempty"`
	Targets []string `json:"targets,omitempty"`
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// extra sets one extra fact.
func (e *Expected) extra(k string, v any) {
	if e.Extra == nil {
		e.Extra = map[string]json.RawMessage{}
	}
	b, _ := json.Marshal(v)
	e.Extra[k] = b
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
