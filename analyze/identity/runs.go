package identity

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/timeline"
)

// jobRun is what identity needs of a job run record (ingest versions).
type jobRun struct {
	Job      string   `json:"job"`
	Run      string   `json:"run"`
	Consumed []string `json:"consumed"`
	Pods     []string `json:"pods"`
	ev       Evidence
}

var runFilter = func() *timeline.Filter {
	// The resource lets a store find the runs by its index of resource
	// and verb: on a 10 M-record SQLite timeline with no run at all, the
	// filter without it read every record (2.4 s of each investigate).
	f, err := timeline.CompileFilter(fmt.Sprintf(`source == %q && resource == %q && verb == %q`,
		timeline.SourceVersions, timeline.JobRunResource, timeline.VerbRun))
	if err != nil {
		panic(err) // static
	}
	return f
}()

// loadRuns indexes, by pod ("ns/name" and "uid:UID"), the latest job run
// started by the instant that names the pod.
func (r *Resolver) loadRuns(ctx context.Context) error {
	if r.runs != nil {
		return nil
	}
	r.runs = map[string]*jobRun{}
	q := timeline.Query{Where: runFilter}
	if !r.at.IsZero() {
		q.Until = r.at.Add(time.Nanosecond)
	}
	for rec, err := range r.store.Records(ctx, q) {
		if err != nil {
			return err
		}
		var jr jobRun
		if json.Unmarshal(rec.Extra, &jr) != nil {
			continue
		}
		jr.ev = Evidence{Ref: "JobRun/" + jr.Job + "/" + jr.Run, Time: rec.Time, Run: rec.Evidence.Run, Line: rec.Evidence.Line}
		for _, p := range jr.Pods {
			if cur := r.runs[p]; cur == nil || !rec.Time.Before(cur.ev.Time) {
				r.runs[p] = &jr
			}
		}
	}
	return nil
}

// runDims are the dimensions a job run gives the pod it ran as.
func (r *Resolver) runDims(ctx context.Context, p *obj) ([]Dimension, error) {
	if err := r.loadRuns(ctx); err != nil {
		return nil, err
	}
	jr := r.runs[p.v.Object.Namespace+"/"+p.v.Object.Name]
	if jr == nil && p.v.Object.UID != "" {
		jr = r.runs["uid:"+p.v.Object.UID]
	}
	if jr == nil {
		return nil, nil
	}
	dims := []Dimension{{Name: "run", Value: jr.Job + " " + jr.Run, Evidence: jr.ev}}
	for _, c := range jr.Consumed {
		kn, v, ok := strings.Cut(c, "@")
		if ok {
			dims = append(dims, Dimension{Name: "artifact.consumed/" + kn, Value: v, Evidence: jr.ev})
		}
	}
	return dims, nil
}
