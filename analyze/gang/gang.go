// Package gang separates, in a job of many ranks, the first rank to fail
// (and its cause) from the ranks that died because of it: in a gang job
// (MPI, NCCL collectives) one dead rank takes every other rank down within
// seconds, and the hundreds of failures that follow say nothing about the
// cause. The first failure does.
package gang

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/outcome"
)

// MinRanks is the smallest job treated as a gang.
const MinRanks = 8

// gangKinds are the owners whose pods run as one gang. (A ReplicaSet's
// replicas serve independently: a failure among them is no cascade.)
var gangKinds = map[string]bool{"Job": true, "MPIJob": true, "PyTorchJob": true, "TFJob": true,
	"JobSet": true, "RayJob": true, "XGBoostJob": true, "PaddleJob": true, "LeaderWorkerSet": true}

// Rank is one failed member of a gang job.
type Rank struct {
	Ref      string    `json:"ref"`
	Rank     string    `json:"rank,omitempty"`
	At       time.Time `json:"at"`
	Reason   string    `json:"reason"`
	ExitCode int       `json:"exitCode,omitempty"`
	Message  string    `json:"message,omitempty"`
	Record   int64     `json:"record,omitempty"`
	// Node is the node it ran on, when its identity says.
	Node string `json:"node,omitempty"`
}

// HostError is one fault a node's own log reported (a GPU Xid, an ECC
// error, an OOM kill, ...) before a unit on that node failed.
type HostError struct {
	Node    string        `json:"node"`
	Reason  string        `json:"reason"`
	Code    int           `json:"code,omitempty"`
	At      time.Time     `json:"at"`
	Lead    time.Duration `json:"leadNs"` // how long before the unit failed
	Meaning string        `json:"meaning,omitempty"`
	// Origin is what the fault's catalog says its usual cause is:
	// "hardware", "driver", "application", or "" when not known.
	Origin string `json:"origin,omitempty"`
	Action string `json:"action,omitempty"` // what the catalog recommends
	// Chance is how likely a fault of this kind was to land on this node
	// in Lead by chance, from its rate over the fleet in the window.
	Chance float64 `json:"chance"`
	Record int64   `json:"record,omitempty"`
	// Run and Line are where the node's log said it.
	Run  int64 `json:"run"`
	Line int64 `json:"line"`
}

// What says what the fault is in a few words: "Xid 79 (GPU has fallen
// off the bus)".
func (h HostError) What() string {
	s := h.Reason
	if h.Code != 0 {
		s += " " + strconv.Itoa(h.Code)
	}
	if h.Meaning != "" {
		s += " (" + h.Meaning + ")"
	}
	return s
}

// Explains says whether the fault explains the rank's failure on its own:
// not the application's own doing (an Xid the catalog blames on the
// application is what a crashing program leaves behind), and no likely
// coincidence (Chance below MaxChance).
func (h HostError) Explains() bool { return h.Origin != "application" && h.Chance < MaxChance }

// MaxChance is the largest chance of a coincidence in time at which a
// host fault still explains a failure: one in a hundred.
const MaxChance = 0.01

// Finding is what happened to one gang job.
type Finding struct {
	Owner string `json:"owner"` // Kind/name of the job
	Ranks int    `json:"ranks"`
	// First is the first rank to fail: the cause's witness.
	First Rank `json:"first"`
	// Lead is how long before the next failure the first came.
	Lead time.Duration `json:"leadNs"`
	// Cascade are the ranks that failed after it, by reason.
	Cascade        int            `json:"cascade"`
	CascadeReasons map[string]int `json:"cascadeReasons"`
	// Terminated are the ranks deleted without failing themselves (the
	// controller tearing the job down).
	Terminated int `json:"terminated"`
	// Distinct says the first rank failed for a reason none of the cascade
	// shares (OOMKilled vs NCCL errors): strong evidence it is the cause.
	Distinct bool `json:"distinct"`
	// Host are the faults the first rank's node logged from its start
	// until it failed, the least likely coincidence first.
	Host []HostError `json:"hostErrors,omitempty"`
}

// HostCause is the first rank's host fault that explains its failure, if
// one does.
func (f *Finding) HostCause() (HostError, bool) {
	for _, h := range f.Host {
		if h.Explains() {
			return h, true
		}
	}
	return HostError{}, false
}

// Find returns a finding for every job of at least MinRanks pods of which
// more than one failed, largest first. rankOf gives a pod's rank ("" if
// unknown).
func Find(units []*outcome.Unit, rankOf func(u *outcome.Unit) string) []Finding {
	byOwner := map[string][]*outcome.Unit{}
	for _, u := range units {
		if kind, _, _ := strings.Cut(u.Owner, "/"); gangKinds[kind] {
			byOwner[u.Namespace+"/"+u.Owner] = append(byOwner[u.Namespace+"/"+u.Owner], u)
		}
	}
	var out []Finding
	for _, members := range byOwner {
		if len(members) < MinRanks {
			continue
		}
		var bad []*outcome.Unit
		terminated := 0
		for _, u := range members {
			switch {
			case u.Bad() && !u.Refused && !u.Killed && u.Target.IsZero():
				// A rank whose request was refused did not die of it, nor
				// did one its Job terminated, nor one another client's
				// operation on it was refused for.
				bad = append(bad, u)
			case !u.Deleted.IsZero():
				terminated++
			}
		}
		if len(bad) < 2 {
			continue
		}
		sort.Slice(bad, func(i, j int) bool {
			if !bad[i].BadAt.Equal(bad[j].BadAt) {
				return bad[i].BadAt.Before(bad[j].BadAt)
			}
			return bad[i].Ref < bad[j].Ref
		})
		first := bad[0]
		f := Finding{
			Owner: first.Owner, Ranks: len(members),
			First: Rank{Ref: first.Ref, At: first.BadAt, Reason: first.Reason, ExitCode: first.ExitCode,
				Message: first.Message, Record: first.RecordID},
			Lead: bad[1].BadAt.Sub(first.BadAt), Cascade: len(bad) - 1,
			CascadeReasons: map[string]int{}, Terminated: terminated, Distinct: true,
		}
		if rankOf != nil {
			f.First.Rank = rankOf(first)
		}
		for _, u := range bad[1:] {
			f.CascadeReasons[u.Reason]++
			if u.Reason == first.Reason && u.ExitCode == first.ExitCode {
				f.Distinct = false
			}
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Cascade != out[j].Cascade {
			return out[i].Cascade > out[j].Cascade
		}
		return out[i].Owner < out[j].Owner
	})
	return out
}
