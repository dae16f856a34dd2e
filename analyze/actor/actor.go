// Package actor names who made an object version: the user (or service
// account) and user agent of the audit record that wrote it. Suspects,
// history entries and the changes of a bisect window all ask it, so they
// name the same actor for the same version.
package actor

import (
	"context"
	"iter"
	"slices"
	"time"

	"github.com/faultline/faultline/timeline"
)

// Unknown is what a version with no audit record of its making says: it
// was seen only in a dump (or a read), so who made it is not in the
// evidence.
const Unknown = "actor unknown (no audit record)"

// Actor is who made a version.
type Actor struct {
	By        string `json:"by,omitempty"` // username or service account
	UserAgent string `json:"userAgent,omitempty"`
}

// Known reports whether an audit record named the actor.
func (a Actor) Known() bool { return a.By != "" }

// String is "by USER (USER-AGENT)", or Unknown.
func (a Actor) String() string {
	switch {
	case a.By == "":
		return Unknown
	case a.UserAgent == "":
		return "by " + a.By
	}
	return "by " + a.By + " (" + a.UserAgent + ")"
}

// Store is what actors are read from.
type Store interface {
	Records(ctx context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error]
}

// near is how far from a version's time its audit record is looked for.
const near = 5 * time.Second

// writes are the verbs that make a version.
var writes = []string{"create", "update", "patch", "delete", "deletecollection", "apply"}

// At finds the audit record at ev (run and line) near at, the record a
// version or a change was read from, and returns its user and user agent.
// It is the zero Actor when no audit record with a user is there.
func At(ctx context.Context, s Store, ev timeline.Evidence, at time.Time) (Actor, error) {
	if ev.Run == 0 || at.IsZero() {
		return Actor{}, nil
	}
	for r, err := range s.Records(ctx, timeline.Query{Since: at.Add(-near), Until: at.Add(near)}) {
		if err != nil {
			return Actor{}, err
		}
		if r.Evidence == ev && r.User != "" {
			return Actor{By: r.User, UserAgent: r.UserAgent}, nil
		}
	}
	return Actor{}, nil
}

// OfVersion names who made v: the write at v's evidence when the audit log
// recorded its making, else the audited write of the same object nearest
// v's time (within a few seconds) when v was seen by a read. A version
// known only from a dump (timeline.SeenInferred) has no actor: its time
// is a lower bound, any write near it may have made another version.
func OfVersion(ctx context.Context, s Store, v *timeline.ObjectVersion) (Actor, error) {
	if v.Seen == timeline.SeenInferred || v.Time.IsZero() {
		return Actor{}, nil
	}
	var (
		best     Actor
		bestDist = near + 1
	)
	for r, err := range s.Records(ctx, timeline.Query{Since: v.Time.Add(-near), Until: v.Time.Add(near)}) {
		if err != nil {
			return Actor{}, err
		}
		if r.User == "" || !slices.Contains(writes, r.Verb) {
			continue
		}
		if r.Evidence == v.Evidence && v.Evidence.Run != 0 {
			return Actor{By: r.User, UserAgent: r.UserAgent}, nil
		}
		o := r.Object
		if o.Resource != v.Object.Resource || o.Namespace != v.Object.Namespace || o.Name != v.Object.Name ||
			!slices.Contains([]string{"", "status", "scale"}, o.Subresource) ||
			(o.UID != "" && v.Object.UID != "" && o.UID != v.Object.UID) || r.Code >= 300 || r.Time.After(v.Time) {
			continue
		}
		if d := r.Time.Sub(v.Time).Abs(); d < bestDist {
			best, bestDist = Actor{By: r.User, UserAgent: r.UserAgent}, d
		}
	}
	return best, nil
}
