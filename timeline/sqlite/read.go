package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/filtersql"
)

// recordColumns lists what Records selects; interned columns come as ids,
// resolved through the store's read cache (strs rows never change); encoded
// ones (rowenc.go) are decoded by SQLite.
var recordColumns = recordColumnsFor(0)

// recordCols are recordColumns, each with the field it fills (0: every
// read reads it) and the constant that stands in for it in a read that
// leaves the field out (timeline.FieldSet): an interned field's id 0 is
// the empty string, and nothing is decoded.
var recordCols = []filtersql.Column{
	filtersql.Always("r.id"), filtersql.Always("r.time_ns"), filtersql.Always("r.source"), filtersql.Always("r.api_group"),
	filtersql.Always("r.api_version"), filtersql.Always("r.resource"), filtersql.Always("r.subresource"), filtersql.Always("r.kind"),
	filtersql.Always("r.namespace"), filtersql.Always("r.name"), filtersql.Always(idSQL("r.uid")),
	filtersql.Optional("r.verb", timeline.FieldVerb, "0"),
	filtersql.Optional("r.reason", timeline.FieldReason, "0"),
	filtersql.Optional("r.user", timeline.FieldUser, "0"),
	filtersql.Optional("r.user_agent", timeline.FieldUserAgent, "0"),
	filtersql.Optional("r.source_ip", timeline.FieldSourceIP, "0"),
	filtersql.Optional("r.code", timeline.FieldCode, "0"),
	filtersql.Optional("r.type", timeline.FieldType, "0"),
	filtersql.Optional("r.level", timeline.FieldLevel, "0"),
	filtersql.Optional("r.latency_ns", timeline.FieldLatency, "0"),
	filtersql.Optional("r.stages", timeline.FieldStages, "0"),
	filtersql.Optional(idSQL("r.audit_id"), timeline.FieldAuditID, "''"),
	filtersql.Optional(uriSQL("r"), timeline.FieldURI, "''"),
	filtersql.Optional("r.message", timeline.FieldMessage, "''"),
	filtersql.Always("r.run_id"), filtersql.Always("r.line"),
	filtersql.Optional(extraSQL("r"), timeline.FieldExtra, "NULL"),
}

// recordColumnsFor is recordColumns with the fields f leaves out replaced
// by constants.
func recordColumnsFor(f timeline.FieldSet) string { return filtersql.SelectList(recordCols, f) }

func (s *Store) scanRecord(ctx context.Context, rows *sql.Rows) (*timeline.Record, error) {
	var (
		r                  timeline.Record
		t, lat, stages     int64
		extra              sql.NullString
		run, line, code, i int64
		ids                [15]int64
	)
	err := rows.Scan(&i, &t, &ids[0], &ids[1], &ids[2], &ids[3], &ids[4], &ids[5], &ids[6],
		&ids[7], &r.Object.UID, &ids[8], &ids[9], &ids[10], &ids[11], &ids[12], &code, &ids[13], &ids[14], &lat,
		&stages, &r.AuditID, &r.URI, &r.Message, &run, &line, &extra)
	if err != nil {
		return nil, err
	}
	var source string
	o := &r.Object
	if err := s.strsOf(ctx, ids[:], []*string{&source, &o.Group, &o.Version, &o.Resource, &o.Subresource, &o.Kind,
		&o.Namespace, &o.Name, &r.Verb, &r.Reason, &r.User, &r.UserAgent, &r.SourceIP, &r.Type, &r.Level}); err != nil {
		return nil, err
	}
	r.ID, r.Time, r.Source, r.Code = i, fromNS(t), timeline.SourceKind(source), int(code)
	r.Latency, r.Stages = time.Duration(lat), timeline.Stage(stages)
	r.Evidence = timeline.Evidence{Run: run, Line: line}
	if extra.Valid {
		r.Extra = []byte(extra.String)
	}
	return &r, nil
}

// strsOf sets *dsts[i] to the string of ids[i], as strOf does, taking the
// cache's lock once for all of them (a record has 15).
func (s *Store) strsOf(ctx context.Context, ids []int64, dsts []*string) error {
	miss := false
	s.reads.mu.Lock()
	for i, id := range ids {
		if id == 0 {
			*dsts[i] = ""
		} else if v, ok := s.reads.m[id]; ok {
			*dsts[i] = v
		} else {
			miss = true
		}
	}
	s.reads.mu.Unlock()
	if !miss {
		return nil
	}
	for i, id := range ids {
		var err error
		if *dsts[i], err = s.strOf(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// strOf resolves an interned string id, through a cache: strs rows are
// never rewritten, so a cached id stays true.
func (s *Store) strOf(ctx context.Context, id int64) (string, error) {
	if id == 0 {
		return "", nil
	}
	s.reads.mu.Lock()
	v, ok := s.reads.m[id]
	s.reads.mu.Unlock()
	if ok {
		return v, nil
	}
	if err := s.strs.QueryRowContext(ctx, "SELECT s FROM strs WHERE id = ?", id).Scan(&v); err != nil {
		return "", fmt.Errorf("string %d: %w", id, err)
	}
	s.reads.mu.Lock()
	if s.reads.m == nil || len(s.reads.m) >= maxCachedStrs {
		s.reads.m = map[int64]string{}
	}
	s.reads.m[id] = v
	s.reads.mu.Unlock()
	return v, nil
}

// recordQuery builds the SQL for q. residual reports whether rows must still
// be checked with q.Where.Match, because part of the filter has no SQL form.
func recordQuery(q timeline.Query) (query string, args []any, residual bool) {
	query, args, residual, _, _ = recordRead(q)
	return query, args, residual
}

// recordRead is recordQuery, and whether the records it reads must still
// be cleared in Go (Query.Keep; see readColumns), or else have their extra
// made the pod's alone (filtersql.PodOnly, KeepPod).
func recordRead(q timeline.Query) (query string, args []any, residual, keep, pod bool) {
	var where []string
	if !q.Since.IsZero() {
		where = append(where, "r.time_ns >= ?")
		args = append(args, boundNS(q.Since))
	}
	if !q.Until.IsZero() {
		where = append(where, "r.time_ns < ?")
		args = append(args, boundNS(q.Until))
	}
	if q.Where != nil {
		w, wargs, complete := compileWhere(q.Where.Expr())
		if w != "" {
			where = append(where, "("+w+")")
			args = append(args, wargs...)
		}
		residual = !complete
		if q.Bad != nil && filtersql.HasConjunct(q.Where.Expr(), "bad") {
			// The classifier's bad set, as a key set: only its records
			// are read (bad itself is checked again row by row).
			ids := make([]int64, 0, len(q.Bad))
			for id, bad := range q.Bad {
				if bad {
					ids = append(ids, id)
				}
			}
			slices.Sort(ids)
			b, _ := json.Marshal(ids) // []int64: cannot fail
			where = append(where, "r.id IN (SELECT value FROM json_each(?))")
			args = append(args, string(b))
		}
	}
	cols, colArgs, keep := readColumns(q, residual)
	args = append(colArgs, args...)
	order := " ORDER BY r.time_ns, r.id"
	if q.Desc {
		order = " ORDER BY r.time_ns DESC, r.id DESC"
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	if q.Limit > 0 && !residual {
		// The rows are chosen by their ids alone, then read. Asked for
		// every column (the strings' lookups among them), SQLite 3.54
		// plans "the first record" as a scan of the whole table and a
		// sort, which looked up the strings of every row: 0.8-0.9 s for
		// `timeline --limit 1` on the 10 M-record benchmark file; the
		// ids alone come from the time index, in microseconds.
		cond = fmt.Sprintf(" WHERE r.id IN (SELECT r.id FROM record r%s%s LIMIT %d)", cond, order, q.Limit)
	}
	return "SELECT " + cols + " FROM record r" + cond + order, args, residual, keep, filtersql.PodOnly(q, residual)
}

// readColumns are the columns a read of q selects (see timeline.FieldSet),
// with the arguments of their placeholders: those of q.Fields; those
// q.Where reads when rows must still be matched with it (residual); and
// q.FieldsWhere's, on the rows its filter keeps, in SQL when the filter
// has a complete SQL form. keep reports that the records read must still
// be cleared in Go (Query.Keep): their fields were read whole, for the
// residual filter or for q.FieldsWhere's.
func readColumns(q timeline.Query, residual bool) (cols string, args []any, keep bool) {
	f, more, keep := filtersql.PlanFields(q, residual)
	if more == 0 {
		return recordColumnsFor(f), nil, keep
	}
	w := q.FieldsWhere
	cond, condArgs, complete := compileWhere(w.Where.Expr())
	if !complete || cond == "" {
		return recordColumnsFor(f | more | w.Where.Needs()), nil, true
	}
	cols, n := filtersql.SelectListWhere(recordCols, f, more, "("+cond+")")
	for range n {
		args = append(args, condArgs...) // once for each time the list holds cond
	}
	return cols, args, keep
}

// Records yields the records matching q in time order (id breaks ties). A
// filter part with no SQL form is evaluated row by row; a row on which it
// fails at run time (a missing annotation key, say) does not match.
func (s *Store) Records(ctx context.Context, q timeline.Query) iter.Seq2[*timeline.Record, error] {
	return func(yield func(*timeline.Record, error) bool) {
		query, args, residual, keep, pod := recordRead(q)
		rows, err := s.db.QueryContext(ctx, query, args...)
		if err != nil {
			yield(nil, fmt.Errorf("query records: %w", err))
			return
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			r, err := s.scanRecord(ctx, rows)
			if err != nil {
				yield(nil, fmt.Errorf("read record: %w", err))
				return
			}
			r.Bad = q.Bad[r.ID]
			if residual {
				if ok, _ := q.Where.Match(r); !ok {
					continue
				}
			}
			if keep {
				q.Keep(r)
			} else if pod {
				filtersql.KeepPod(r)
			}
			if !yield(r, nil) {
				return
			}
			if n++; q.Limit > 0 && n >= q.Limit {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, fmt.Errorf("query records: %w", err))
		}
	}
}

// Bounds returns the times of the first and last evidence held, records and
// object versions alike; both are zero for an empty timeline.
func (s *Store) Bounds(ctx context.Context) (first, last time.Time, err error) {
	// One aggregate per query: SQLite answers a lone min() or max() from
	// the index, but scans the table for min() and max() together.
	// Rows with no time (noTime) are not evidence of when.
	lo, hi := int64(noTime), int64(noTime)
	for i, q := range []string{"SELECT min(time_ns) FROM record WHERE time_ns > ?", "SELECT max(time_ns) FROM record WHERE time_ns > ?",
		"SELECT min(time_ns) FROM object_version WHERE time_ns > ?", "SELECT max(time_ns) FROM object_version WHERE time_ns > ?"} {
		var v sql.NullInt64
		if err := s.db.QueryRowContext(ctx, q, int64(noTime)).Scan(&v); err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("timeline bounds: %w", err)
		}
		switch {
		case !v.Valid:
		case i%2 == 0 && (lo == noTime || v.Int64 < lo):
			lo = v.Int64
		case i%2 == 1 && v.Int64 > hi:
			hi = v.Int64
		}
	}
	return fromNS(lo), fromNS(hi), nil
}

// Runs lists the ingest runs, oldest first.
func (s *Store) Runs(ctx context.Context) ([]timeline.IngestRun, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, source, path, size, sha256, started_ns, finished_ns, first_ns,
		last_ns, lines, records, merged, duplicates, conflicts, versions, bad_lines, status, error, since_ns, until_ns, outside
		FROM ingest_run ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list ingest runs: %w", err)
	}
	defer rows.Close()
	var runs []timeline.IngestRun
	for rows.Next() {
		var (
			r                            timeline.IngestRun
			src, status                  string
			started, finished, first, la int64
			since, until                 sql.NullInt64
		)
		if err := rows.Scan(&r.ID, &src, &r.Path, &r.Size, &r.SHA256, &started, &finished, &first, &la,
			&r.Lines, &r.Records, &r.Merged, &r.Duplicates, &r.Conflicts, &r.Versions, &r.BadLines, &status, &r.Error,
			&since, &until, &r.Outside); err != nil {
			return nil, fmt.Errorf("list ingest runs: %w", err)
		}
		r.Source, r.Status = timeline.SourceKind(src), timeline.RunStatus(status)
		r.Started, r.Finished, r.First, r.Last = fromNS(started), fromNS(finished), fromNS(first), fromNS(la)
		if since.Valid {
			r.Since = fromNS(since.Int64)
		}
		if until.Valid {
			r.Until = fromNS(until.Int64)
		}
		runs = append(runs, r)
	}
	return runs, rows.Err()
}

// Gaps lists, per source kind, the spans of at least min between two
// consecutive records.
//
// SQLite groups the times by source and by bucket of min
// (timeline.GapFinder) in one scan of the table and returns each bucket's
// first and last time; the gaps lie between them. The earlier read, every
// time of a source in order through the time index, fetched each row's
// source from the table: `faultline sources` took 8.9-9.8 s on 10 M
// records so, 3.5-4.0 s with the buckets (SCHEMA.md). A min of zero or
// less (every pair of records a gap) reads every time.
func (s *Store) Gaps(ctx context.Context, min time.Duration) ([]timeline.Gap, error) {
	query := `SELECT coalesce((SELECT s FROM strs WHERE id = source), '') AS src, time_ns, time_ns FROM record WHERE time_ns != ?1
		ORDER BY src, time_ns`
	args := []any{int64(noTime)}
	if min > 0 {
		// A source's buckets are disjoint spans of time: ordered by
		// their first times, they are in time order.
		query = `SELECT coalesce((SELECT s FROM strs WHERE id = source), '') AS src, min(time_ns) AS lo, max(time_ns)
			FROM record WHERE time_ns != ?1
			GROUP BY source, CASE WHEN time_ns < 0 THEN (time_ns + 1) / ?2 - 1 ELSE time_ns / ?2 END ORDER BY src, lo`
		args = append(args, int64(min))
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list gaps: %w", err)
	}
	defer rows.Close()
	g := timeline.GapFinder{Min: min}
	for rows.Next() {
		var src string
		var lo, hi int64
		if err := rows.Scan(&src, &lo, &hi); err != nil {
			return nil, fmt.Errorf("list gaps: %w", err)
		}
		g.Add(timeline.SourceKind(src), lo, hi)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list gaps: %w", err)
	}
	return g.Gaps(), nil
}

// Cursor returns the resourceVersion a watch last committed, or "".
func (s *Store) Cursor(ctx context.Context, name string) (string, error) {
	var rv string
	err := s.db.QueryRowContext(ctx, "SELECT resource_version FROM watch_cursor WHERE name = ?", name).Scan(&rv)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read cursor %s: %w", name, err)
	}
	return rv, nil
}

// LiveObjects lists the objects of a resource that have versions and no
// recorded deletion (a record with verb "deleted" and the object's uid).
func (s *Store) LiveObjects(ctx context.Context, group, resource, namespace string) ([]timeline.ObjectRef, error) {
	deleted := map[string]bool{}
	rows, err := s.db.QueryContext(ctx, `SELECT `+idSQL("r.uid")+` FROM record r
		WHERE r.resource = (SELECT id FROM strs WHERE s = ?) AND r.verb = (SELECT id FROM strs WHERE s = 'deleted')
		AND r.api_group = (SELECT id FROM strs WHERE s = ?)`, resource, group)
	if err != nil {
		return nil, fmt.Errorf("live objects: %w", err)
	}
	for rows.Next() {
		var uid string
		if err := rows.Scan(&uid); err != nil {
			rows.Close()
			return nil, err
		}
		deleted[uid] = true
	}
	rows.Close()
	rows, err = s.db.QueryContext(ctx, `SELECT DISTINCT v.uid, (SELECT s FROM strs WHERE id = v.api_version),
		(SELECT s FROM strs WHERE id = v.kind), (SELECT s FROM strs WHERE id = v.namespace), (SELECT s FROM strs WHERE id = v.name)
		FROM object_version v
		WHERE v.resource = (SELECT id FROM strs WHERE s = ?) AND v.api_group = COALESCE((SELECT id FROM strs WHERE s = ?), -1)
		AND (? = '' OR v.namespace = (SELECT id FROM strs WHERE s = ?)) AND v.uid != ''
		ORDER BY v.uid`, resource, group, namespace, namespace)
	if err != nil {
		return nil, fmt.Errorf("live objects: %w", err)
	}
	defer rows.Close()
	var out []timeline.ObjectRef
	for rows.Next() {
		o := timeline.ObjectRef{Group: group, Resource: resource}
		if err := rows.Scan(&o.UID, &o.Version, &o.Kind, &o.Namespace, &o.Name); err != nil {
			return nil, err
		}
		if !deleted[o.UID] {
			out = append(out, o)
		}
	}
	return out, rows.Err()
}

// Versions returns object versions with their contents. With q.At (or no
// time at all), one version per object: the latest at or before At; objects
// are told apart by uid, or by resource, namespace and name where the uid
// is unknown. With q.ByTime, the versions come in time order, at most
// q.Limit of them, read through the time index.
func (s *Store) Versions(ctx context.Context, q timeline.VersionQuery) ([]timeline.ObjectVersion, error) {
	query, args := versionQuery(q)
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("query versions: %w", err)
	}
	defer rows.Close()
	var out []timeline.ObjectVersion
	for rows.Next() {
		var (
			v  timeline.ObjectVersion
			o  = &v.Object
			t  int64
			bd []byte
		)
		if err := rows.Scan(&o.Group, &o.Version, &o.Resource, &o.Kind, &o.Namespace, &o.Name, &o.UID, &v.ResourceVersion,
			&t, &v.Hash, &bd, &v.Evidence.Run, &v.Evidence.Line, &v.Seen); err != nil {
			return nil, fmt.Errorf("read version: %w", err)
		}
		v.Time, v.Content = fromNS(t), bd
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !q.ByTime {
		timeline.OrderVersions(out)
	}
	return out, nil
}

// versionQuery builds the statement of Versions.
func versionQuery(q timeline.VersionQuery) (query string, args []any) {
	var where []string
	for _, f := range []struct{ col, val string }{{"api_group", q.Group}, {"resource", q.Resource}, {"namespace", q.Namespace}, {"name", q.Name}} {
		if f.val != "" {
			where = append(where, "v."+f.col+" = COALESCE((SELECT id FROM strs WHERE s = ?), -1)")
			args = append(args, f.val)
		}
	}
	if q.UID != "" {
		where = append(where, "v.uid = ?")
		args = append(args, q.UID)
	}
	if !q.Since.IsZero() {
		where = append(where, "v.time_ns >= ?")
		args = append(args, boundNS(q.Since))
	}
	if !q.Until.IsZero() {
		where = append(where, "v.time_ns < ?")
		args = append(args, boundNS(q.Until))
	}
	order := "v.time_ns DESC, v.id DESC"
	if !q.History && !q.At.IsZero() {
		if q.OrFirstAfter {
			// Versions at or before At first, newest first; then the rest,
			// oldest first.
			at := boundNS(q.At)
			order = fmt.Sprintf("(v.time_ns <= %d) DESC, CASE WHEN v.time_ns <= %d THEN -v.time_ns ELSE v.time_ns END, v.id DESC", at, at)
		} else {
			where = append(where, "v.time_ns <= ?")
			args = append(args, boundNS(q.At))
		}
	}
	cond := "1"
	if len(where) > 0 {
		cond = strings.Join(where, " AND ")
	}
	object := "CASE WHEN v.uid != '' THEN v.uid ELSE v.resource || '/' || v.namespace || '/' || v.name END"
	inner := "SELECT v.*, ROW_NUMBER() OVER (PARTITION BY " + object + " ORDER BY " + order + ") AS rn FROM object_version v WHERE " + cond
	if q.History {
		inner = "SELECT v.*, 1 AS rn FROM object_version v WHERE " + cond
	}
	str := func(col string) string { return "(SELECT s FROM strs WHERE id = x." + col + ")" }
	body := "c.body"
	if q.NoContent {
		body = "NULL"
	}
	query = "SELECT " + strings.Join([]string{str("api_group"), str("api_version"), str("resource"), str("kind"), str("namespace"),
		str("name"), "x.uid", "x.resource_version", "x.time_ns", "c.hash", body, "x.run_id", "x.line", "x.seen"}, ", ") +
		" FROM (" + inner + ") x JOIN content c ON c.id = x.content_id WHERE x.rn = 1"
	if !q.ByTime {
		return query + " ORDER BY " + str("namespace") + ", " + str("name") + ", x.uid, x.time_ns, x.id", args
	}
	query += " ORDER BY x.time_ns, x.id"
	if q.Limit > 0 {
		query += " LIMIT ?"
		args = append(args, q.Limit)
	}
	return query, args
}
