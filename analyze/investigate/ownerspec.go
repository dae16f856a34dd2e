package investigate

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/objdiff"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/timeline"
)

// What a controller does with the pods it runs. A pod holds its template,
// but its controller's own spec governs it while it runs: a Job's
// activeDeadlineSeconds and backoffLimit, a StatefulSet's update strategy,
// a DaemonSet's. A write there changes nothing a pod holds (its template
// hash stays), only the generation moves, and the controller acts on the
// pods already running: a deadline passed fails them all at once. Each
// field of a controller's spec outside its template that a write changed
// before the first bad, while the slice's bad units ran under it, is a
// suspect, named as the field with its old and new values (the audit log
// keeps workloads' bodies). It reaches the controller's units alive at the
// write: the bad ones that failed after it, and, against it, the good
// ones that went on. How many pods run (replicas, parallelism) says how
// many, not how they fare: those fields are left out.

// ownerResources are the controllers whose own spec governs their pods,
// by kind.
var ownerResources = map[string]struct{ group, resource string }{
	"Job":         {"batch", "jobs"},
	"ReplicaSet":  {"apps", "replicasets"},
	"StatefulSet": {"apps", "statefulsets"},
	"DaemonSet":   {"apps", "daemonsets"},
}

// scaleFields are the spec fields that say how many pods run.
var scaleFields = map[string]bool{"replicas": true, "parallelism": true}

// ownerSpecSuspects are the changes to the slice's controllers' own specs
// in (since, firstBad].
func ownerSpecSuspects(ctx context.Context, s Store, units []*outcome.Unit, ids []map[string]identity.Dimension,
	where map[string]string, since, firstBad time.Time) ([]*Suspect, error) {
	owners := map[string]bool{}
	for i, u := range units {
		if u.Bad() && !u.Unborn && u.Owner != "" && matches(ids[i], where) {
			owners[u.Namespace+"/"+u.Owner] = true
		}
	}
	keys := make([]string, 0, len(owners))
	for k := range owners {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []*Suspect
	for _, k := range keys {
		ns, owner, _ := strings.Cut(k, "/")
		kind, name, _ := strings.Cut(owner, "/")
		res, ok := ownerResources[kind]
		if !ok {
			continue
		}
		vs, err := s.Versions(ctx, timeline.VersionQuery{Group: res.group, Resource: res.resource, Namespace: ns, Name: name, History: true})
		if err != nil {
			return nil, err
		}
		for _, w := range specWrites(vs, since, firstBad, ownSpec) {
			if scaleFields[w.Path] {
				continue
			}
			sp := w.suspect(kind)
			sp.ownerSpec = true
			bad := 0
			for _, u := range units {
				alive := u.Namespace == ns && u.Owner == owner && !u.Unborn && !u.Created.After(w.v.Time) &&
					(u.Deleted.IsZero() || u.Deleted.After(w.v.Time))
				switch {
				case !alive:
				case u.Bad() && u.BadAt.After(w.v.Time):
					sp.reached[u] = true
					bad++
				case u.Good():
					sp.reached[u] = true
				}
			}
			sp.Why = fmt.Sprintf("its controller's own spec, which governs the pods it runs: %d of its pods ran under it and failed after it", bad)
			out = append(out, sp)
		}
	}
	return out, nil
}

// specWrite is one field of a workload's spec that the write of version
// v changed.
type specWrite struct {
	v *timeline.ObjectVersion
	objdiff.Change
}

// specWrites are the fields changed between consecutive versions of each
// object of vs (by name) whose spec reads, made by versions written in
// (since, until]. spec reads a version's spec, or says to skip it.
func specWrites(vs []timeline.ObjectVersion, since, until time.Time, spec func([]byte) (map[string]any, bool)) []specWrite {
	prev := map[string]map[string]any{} // object -> its last spec
	var out []specWrite
	for i := range vs {
		v := &vs[i]
		cur, ok := spec(v.Content)
		if !ok {
			continue
		}
		before := prev[v.Object.Name]
		prev[v.Object.Name] = cur
		if before == nil || !v.Time.After(since) || v.Time.After(until) {
			continue
		}
		for _, c := range objdiff.Diff(before, cur, objdiff.Options{}) {
			out = append(out, specWrite{v, c})
		}
	}
	return out
}

// suspect is the change as a suspect on the object, of kind, that made
// it, with no unit reached yet.
func (w specWrite) suspect(kind string) *Suspect {
	return &Suspect{Ref: identity.Ref{Kind: kind, Namespace: w.v.Object.Namespace, Name: w.v.Object.Name}.String(), Dimension: "spec." + w.Path,
		From: plain(w.From), To: plain(w.To), At: w.v.Time, Kind: "change", Objects: 1,
		Run: w.v.Evidence.Run, Line: w.v.Evidence.Line, reached: map[*outcome.Unit]bool{}}
}

// ownSpec is a controller's spec without its pod template (which its
// pods hold, and the template hash and content dimensions cover).
func ownSpec(content []byte) (map[string]any, bool) {
	var m struct {
		Spec map[string]any `json:"spec"`
	}
	if json.Unmarshal(content, &m) != nil || m.Spec == nil {
		return nil, false
	}
	delete(m.Spec, "template")
	return m.Spec, true
}

// plain is a JSON value as a reader writes it: a string unquoted, "" for
// none.
func plain(v string) string {
	if s, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
		return s
	}
	return v
}

// undoOwnerSpec sets a controller's spec field back. A Job that already
// failed stays failed: it is run again with the old value.
func undoOwnerSpec(top Suspect) Action {
	kind, ns, name := splitRef(top.Ref)
	field := strings.TrimPrefix(top.Dimension, "spec.")
	a := Action{Action: "rollback", Target: top.Ref, To: top.From,
		Why: fmt.Sprintf("set %s back to %s", top.Dimension, top.From)}
	if top.From == "" {
		a.Why = "remove " + top.Dimension + ", which it did not have"
	}
	if top.From != "" && !strings.ContainsAny(field, ".[") {
		a.Command = command(append([]string{"kubectl", "patch", strings.ToLower(kind) + "/" + name},
			append(nsArgs(ns), "--type", "merge", "-p", fmt.Sprintf(`{"spec":{%q:%s}}`, field, jsonValue(top.From)))...)...)
	}
	if kind == "Job" {
		a.Why += "; a Job that already failed stays failed: run it again with that value (its last good spec: " +
			command("faultline", "history", "job/"+ns+"/"+name) + ")"
	}
	a.Verify = objectCommand("get", kind, ns, name)
	return a
}

// jsonValue writes a plain value back as JSON: a number or boolean as it
// is, anything else as a string.
func jsonValue(v string) string {
	if v == "true" || v == "false" || v == "null" {
		return v
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return v
	}
	if json.Valid([]byte(v)) && (strings.HasPrefix(v, "{") || strings.HasPrefix(v, "[")) {
		return v
	}
	return strconv.Quote(v)
}
