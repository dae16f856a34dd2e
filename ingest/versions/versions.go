// Package versions ingests what ML platforms know and Kubernetes does not:
// artifact versions (datasets, models, checkpoints, configs, images, code)
// with their lineage, job runs with what they consumed and produced and the
// pods they ran as, and rollouts. The format is JSON Lines, or YAML (a list
// or a stream of documents); docs/versions.schema.json defines it.
package versions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/faultline/faultline/ingest/commit"
	"io"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/ingest/yamlsafe"
	"github.com/faultline/faultline/timeline"
)

// Entry is one line of a versions file. Type says which fields apply.
type Entry struct {
	Type string    `json:"type"` // artifact, run or rollout
	Time time.Time `json:"time"`

	// artifact
	Kind     string   `json:"kind,omitempty"` // dataset, model, checkpoint, config, image, code
	Name     string   `json:"name,omitempty"`
	Version  string   `json:"version,omitempty"`
	Digest   string   `json:"digest,omitempty"`
	URI      string   `json:"uri,omitempty"`
	Producer string   `json:"producer,omitempty"`
	Parents  []string `json:"parents,omitempty"` // KIND/NAME@VERSION

	// run
	Job      string     `json:"job,omitempty"` // NAMESPACE/NAME
	Run      string     `json:"run,omitempty"`
	Started  *time.Time `json:"started,omitempty"`
	Ended    *time.Time `json:"ended,omitempty"`
	Outcome  string     `json:"outcome,omitempty"` // running, succeeded, failed, unknown
	Consumed []string   `json:"consumed,omitempty"`
	Produced []string   `json:"produced,omitempty"`
	Pods     []string   `json:"pods,omitempty"` // NAMESPACE/NAME or uid:UID

	// rollout
	Target string `json:"target,omitempty"` // KIND/NAMESPACE/NAME
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
}

var (
	artifactKinds = []string{"dataset", "model", "checkpoint", "config", "image", "code"}
	outcomes      = []string{"running", "succeeded", "failed", "unknown"}
)

// FieldError names the field of an entry that is wrong.
type FieldError struct{ Field, Problem string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// validate checks an entry's fields for its type.
func (e *Entry) validate() error {
	need := func(field, v string) error {
		if v == "" {
			return &FieldError{field, "missing"}
		}
		return nil
	}
	if e.Time.IsZero() && (e.Type != "run" || e.Started == nil) {
		return &FieldError{"time", "missing"}
	}
	switch e.Type {
	case "artifact":
		if !slices.Contains(artifactKinds, e.Kind) {
			return &FieldError{"kind", fmt.Sprintf("%q is not one of %s", e.Kind, strings.Join(artifactKinds, ", "))}
		}
		if err := errors.Join(need("name", e.Name), need("version", e.Version)); err != nil {
			return err
		}
		for i, p := range e.Parents {
			if _, err := ParseArtifactRef(p); err != nil {
				return &FieldError{fmt.Sprintf("parents[%d]", i), err.Error()}
			}
		}
	case "run":
		if err := errors.Join(need("job", e.Job), need("run", e.Run)); err != nil {
			return err
		}
		if !strings.Contains(e.Job, "/") {
			return &FieldError{"job", fmt.Sprintf("%q: want NAMESPACE/NAME", e.Job)}
		}
		if e.Outcome == "" {
			e.Outcome = "unknown"
		}
		if !slices.Contains(outcomes, e.Outcome) {
			return &FieldError{"outcome", fmt.Sprintf("%q is not one of %s", e.Outcome, strings.Join(outcomes, ", "))}
		}
		for field, refs := range map[string][]string{"consumed": e.Consumed, "produced": e.Produced} {
			for i, p := range refs {
				if _, err := ParseArtifactRef(p); err != nil {
					return &FieldError{fmt.Sprintf("%s[%d]", field, i), err.Error()}
				}
			}
		}
		if e.Time.IsZero() {
			e.Time = *e.Started
		}
	case "rollout":
		if err := errors.Join(need("target", e.Target), need("to", e.To)); err != nil {
			return err
		}
	case "":
		return &FieldError{"type", "missing: want artifact, run or rollout"}
	default:
		return &FieldError{"type", fmt.Sprintf("%q: want artifact, run or rollout", e.Type)}
	}
	return nil
}

// ArtifactRef is KIND/NAME@VERSION.
type ArtifactRef struct{ Kind, Name, Version string }

// ParseArtifactRef reads KIND/NAME@VERSION (dataset/imagenet@v42).
func ParseArtifactRef(s string) (ArtifactRef, error) {
	kn, v, ok := strings.Cut(s, "@")
	k, n, ok2 := strings.Cut(kn, "/")
	if !ok || !ok2 || k == "" || n == "" || v == "" {
		return ArtifactRef{}, fmt.Errorf("%q: want KIND/NAME@VERSION, e.g. dataset/imagenet@v42", s)
	}
	if !slices.Contains(artifactKinds, k) {
		return ArtifactRef{}, fmt.Errorf("%q: kind %q is not one of %s", s, k, strings.Join(artifactKinds, ", "))
	}
	return ArtifactRef{k, n, v}, nil
}

// record maps an entry to a timeline record (source "versions").
func (e *Entry) record() (*timeline.Record, error) {
	extra, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	r := &timeline.Record{Time: e.Time.UTC(), Source: timeline.SourceVersions, Extra: extra}
	switch e.Type {
	case "artifact":
		r.Key = "artifact\x00" + e.Kind + "\x00" + e.Name + "\x00" + e.Version
		r.Verb = "publish"
		r.Object = timeline.ObjectRef{Group: "faultline.dev", Resource: "artifacts", Kind: e.Kind, Name: e.Name}
		r.Message = e.Kind + "/" + e.Name + "@" + e.Version
		r.User = e.Producer
	case "run":
		ns, name, _ := strings.Cut(e.Job, "/")
		r.Key = "run\x00" + e.Job + "\x00" + e.Run + "\x00" + e.Outcome
		r.Verb = timeline.VerbRun
		r.Object = timeline.ObjectRef{Group: "faultline.dev", Resource: timeline.JobRunResource, Namespace: ns, Name: name}
		r.Reason = e.Outcome
		r.Message = e.Run
	case "rollout":
		r.Key = "rollout\x00" + e.Target + "\x00" + e.To + "\x00" + e.Time.UTC().Format(time.RFC3339Nano)
		r.Verb = "rollout"
		parts := strings.SplitN(e.Target, "/", 3)
		r.Object = timeline.ObjectRef{Kind: parts[0]}
		switch len(parts) {
		case 3:
			r.Object.Namespace, r.Object.Name = parts[1], parts[2]
		case 2:
			r.Object.Name = parts[1]
		}
		r.Message = e.From + " -> " + e.To
	}
	return r, nil
}

// Options tune an ingest.
type Options struct {
	Strict    bool
	OnSkip    input.OnSkip // hears of every bad line (or YAML document) as it is skipped
	BatchSize int          // entries per transaction; <= 0: commit.Size
	// FS, if set, holds the files: paths name files of it, read with
	// input.OpenFS.
	FS fs.FS
}

// Ingest reads versions files (JSON Lines, or YAML by .yaml/.yml name) into
// the store, one run per file. Bad entries are reported and skipped.
func Ingest(ctx context.Context, store timeline.Appender, paths []string, opt Options) ([]timeline.IngestRun, error) {
	return input.Each(paths, func(p string) (*timeline.IngestRun, error) { return ingestFile(ctx, store, p, opt) })
}

// ErrStrict wraps the bad entry that stopped a --strict ingest.
var ErrStrict = errors.New("stopped at the first bad entry (--strict)")

func ingestFile(ctx context.Context, store timeline.Appender, path string, opt Options) (*timeline.IngestRun, error) {
	src, err := input.OpenIn(ctx, opt.FS, path, 0)
	if err != nil {
		return nil, fmt.Errorf("ingest versions: %w", err)
	}
	defer src.Close()
	name := src.RunPath()
	run := &timeline.IngestRun{Source: timeline.SourceVersions, Path: name, Size: src.Size}
	if err := store.BeginRun(ctx, run); err != nil {
		return nil, err
	}
	// Committed by count and by time: a kill loses at most the last
	// second's entries, and a file never sits in one transaction.
	b, err := commit.Open(ctx, store, run)
	if err != nil {
		return run, err
	}
	if opt.BatchSize > 0 {
		b.Size = opt.BatchSize
	}
	w := &entryWriter{run: run, batch: b, src: src, opt: opt}
	// Entries are stored as they are read. One read before a fault (or
	// Ctrl-C on a pipe) is stored even so: it is in memory.
	readErr := read(ctx, src, path, func(en entryAt) error { return w.add(ctx, en) })
	var se *storeError
	switch {
	case errors.As(readErr, &se):
		err = se.err
	case errors.Is(readErr, ErrStrict):
		err = readErr
	case readErr != nil && ctx.Err() == nil:
		err = fmt.Errorf("ingest versions %s: %w", src.Name(), readErr)
	default:
		err = ctx.Err()
	}
	return run, w.finish(ctx, store, err)
}

// entryWriter stores the entries of one file into its run.
type entryWriter struct {
	run   *timeline.IngestRun
	batch *commit.Periodic
	src   *input.Source
	opt   Options
}

// add stores one entry read, or reports it as skipped; an error of the
// store is a *storeError.
func (w *entryWriter) add(ctx context.Context, en entryAt) error {
	run := w.run
	run.Lines++
	if en.err == nil {
		en.err = en.e.validate()
	}
	var rec *timeline.Record
	if en.err == nil {
		rec, en.err = en.e.record()
	}
	if en.err != nil {
		bad := &input.Skip{Path: w.src.Name(), Line: en.line, Err: en.err}
		run.BadLines++
		w.opt.OnSkip.Report(bad)
		if w.opt.Strict {
			return fmt.Errorf("%w: %w", ErrStrict, bad)
		}
		return nil
	}
	rec.Evidence = timeline.Evidence{Run: run.ID, Line: en.line}
	res, err := w.batch.Batch().AddRecord(context.WithoutCancel(ctx), rec)
	if err != nil {
		return &storeError{err}
	}
	run.Tally(res)
	if run.First.IsZero() || rec.Time.Before(run.First) {
		run.First = rec.Time
	}
	if rec.Time.After(run.Last) {
		run.Last = rec.Time
	}
	if err := w.batch.Added(ctx); err != nil {
		return &storeError{err}
	}
	return nil
}

// finish ends the run, failed by err if set: what was read is committed
// even when ctx is done (Ctrl-C). It returns err, or the first error of
// the commit and of finishing the run.
func (w *entryWriter) finish(ctx context.Context, store timeline.Appender, err error) error {
	return w.batch.Finish(ctx, store, w.src, err)
}

// storeError is a failure to store, not a bad entry: the ingest stops.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

type entryAt struct {
	e    Entry
	line int64
	err  error
}

// read parses a file's entries, handing each to each as it is read: JSON
// Lines, streamed, or YAML (a list or documents, read whole) when the name
// says .yaml or .yml. YAML entries are numbered by position. It stops at
// the first error each returns, or when ctx is done.
func read(ctx context.Context, src *input.Source, path string, each func(entryAt) error) (err error) {
	ext := strings.ToLower(filepath.Ext(strings.TrimSuffix(path, ".gz")))
	if ext == ".yaml" || ext == ".yml" {
		return readYAML(ctx, src, each)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, no, err := src.Line()
		if errors.Is(err, io.EOF) {
			return nil
		}
		var tl *input.ErrLineTooLong
		if errors.As(err, &tl) {
			if err := each(entryAt{line: no, err: &FieldError{"line", tl.Error()}}); err != nil {
				return err
			}
			continue
		}
		var dmg *input.DamagedError
		if errors.As(err, &dmg) {
			if err := each(entryAt{line: dmg.Lines + 1, err: &FieldError{"file", dmg.Error()}}); err != nil {
				return err
			}
			continue // io.EOF next
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, derr := decode(line)
		if err := each(entryAt{e: e, line: no, err: derr}); err != nil {
			return err
		}
	}
}

// readYAML reads a YAML file whole (a list or documents) and hands each
// entry to each. Aliases are bounded (yamlsafe), so no document grows past
// its own size by much.
func readYAML(ctx context.Context, src *input.Source, each func(entryAt) error) error {
	data, err := io.ReadAll(src.Reader())
	var dmg *input.DamagedError
	var damage *entryAt
	switch {
	case errors.As(err, &dmg):
		// Keep the whole lines decoded before the fault: documents there
		// are whole; the cut one is reported with the damage, last.
		data = data[:bytes.LastIndexByte(data, '\n')+1]
		damage = &entryAt{err: &FieldError{"file", dmg.Error()}}
	case err != nil:
		return err
	}
	n := int64(0)
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := yamlsafe.ToJSON(doc) // aliases bounded: no alias bomb
		if err != nil {
			n++
			if err := each(entryAt{line: n, err: &FieldError{"yaml", err.Error()}}); err != nil {
				return err
			}
			continue
		}
		var items []json.RawMessage
		if bytes.HasPrefix(bytes.TrimSpace(js), []byte("[")) {
			if err := json.Unmarshal(js, &items); err != nil {
				n++
				if err := each(entryAt{line: n, err: &FieldError{"yaml", err.Error()}}); err != nil {
					return err
				}
				continue
			}
		} else {
			items = []json.RawMessage{js}
		}
		for _, it := range items {
			n++
			e, err := decode(it)
			if err := each(entryAt{e: e, line: n, err: err}); err != nil {
				return err
			}
		}
	}
	if damage != nil {
		damage.line = n + 1
		return each(*damage)
	}
	return nil
}

// decode reads one entry, refusing unknown fields so typos are caught.
// Of several faults in one entry, the first in the line is named.
func decode(b []byte) (Entry, error) {
	var e Entry
	d := json.NewDecoder(bytes.NewReader(b))
	err := d.Decode(&e)
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var pe *time.ParseError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return e, &FieldError{"json", "truncated: unexpected end of input"}
	case errors.As(err, &se):
		return e, &FieldError{"json", fmt.Sprintf("%v (byte %d)", se, se.Offset)}
	}
	// encoding/json returns a type error or an unknown field (refused here
	// rather than by DisallowUnknownFields, whose error is text only) only
	// if nothing stopped the decoding, and then the first of them.
	if err == nil || errors.As(err, &te) {
		if name, at, ok := unknownField(b[:d.InputOffset()]); ok && (err == nil || int64(at) < te.Offset) {
			return e, &FieldError{name, "unknown field"}
		}
	}
	switch {
	case err == nil:
		return e, nil
	case errors.As(err, &te):
		return e, &FieldError{te.Field, fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)}
	case errors.As(err, &pe):
		return e, &FieldError{"time", err.Error()}
	}
	return e, &FieldError{"json", err.Error()}
}

// entryFields are the JSON names of Entry's fields.
var entryFields = func() []string {
	t := reflect.TypeOf(Entry{})
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}()

// unknownField returns the first key of the JSON object b that names no
// field of Entry (matched without case, as encoding/json matches them),
// with the offset of its value; b is valid JSON.
func unknownField(b []byte) (name string, at int, ok bool) {
	obj := gjson.ParseBytes(b)
	if !obj.IsObject() {
		return "", 0, false
	}
	obj.ForEach(func(k, v gjson.Result) bool {
		if !slices.ContainsFunc(entryFields, func(f string) bool { return strings.EqualFold(f, k.Str) }) {
			// Named as encoding/json reads it (invalid UTF-8 replaced).
			name, at, ok = k.Str, v.Index, true
			_ = json.Unmarshal([]byte(k.Raw), &name)
		}
		return !ok
	})
	return name, at, ok
}
