package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/faultline/faultline/timeline"
)

const (
	uuidA   = "0b6a7d3e-2f1c-4f57-9d0c-3c8f1f3c2a11"
	extraMD = `{"annotations":{"apiserver.latency.k8s.io/apf-queue-wait":"1.2ms","apiserver.latency.k8s.io/total":"8.7ms",` +
		`"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"x\""},` +
		`"groups":["system:nodes","system:authenticated"],"resourceVersion":"2152660779"}`
)

// encodingRecords are records whose long strings take every branch of
// rowenc.go: encoded, and kept as they are.
func encodingRecords() []timeline.Record {
	pod := timeline.ObjectRef{Version: "v1", Resource: "pods", Namespace: "ml", Name: "p1", UID: uuidA}
	var out []timeline.Record
	add := func(key string, f func(r *timeline.Record)) {
		r := stage(key, time.Duration(len(out))*time.Millisecond, timeline.StageResponseComplete, "get", pod, 200, time.Millisecond)
		r.URI = "/api/v1/namespaces/ml/pods/p1"
		f(&r)
		out = append(out, r)
	}
	add(uuidA, func(r *timeline.Record) { r.Extra = []byte(extraMD) })
	add("0B6A7D3E-2F1C-4F57-9D0C-3C8F1F3C2A11", func(r *timeline.Record) { // upper case: kept as text
		r.Object.UID = "0B6A7D3E-2F1C-4F57-9D0C-3C8F1F3C2A11"
		r.URI = "/api/v1/namespaces/ml/pods/p1?resourceVersion=0&limit=500"
	})
	add("not-a-uuid", func(r *timeline.Record) {
		r.Object.UID = "{" + uuidA[1:35] + "}"
		r.URI = "/api/v1/namespaces/ml/pods/ml?watch=1" // the name is the namespace too
		r.Object.Name = "ml"
	})
	add("1b8bab62-2849-47b5-9ba3-3d4a0f537a5g", func(r *timeline.Record) { // g: not hex
		r.URI = "/version"
		r.Object = timeline.ObjectRef{}
		r.Extra = []byte(`{"groups":["system:authenticated"]}`)
	})
	add("ctl", func(r *timeline.Record) { // the markers themselves: both kept as they are
		r.URI = "/api/v1/namespaces/ml/pods/p1\x01\x02"
		r.Extra = []byte(`{"annotations":{"authorization.k8s.io/reason":"a` + "\x01" + `"},"groups":["g"]}`)
	})
	add("marker", func(r *timeline.Record) { // a namespace holding the name's marker
		r.Object.Namespace = "a\x02"
		r.URI = "/api/v1/namespaces/a\x02/pods/p1"
	})
	add("empty", func(r *timeline.Record) {
		r.URI, r.AuditID, r.Object.UID = "", "", ""
		r.Extra = []byte(`{"count":3,"eventName":"x"}`) // an Event's: no split
	})
	add("braces", func(r *timeline.Record) { // the split's landmarks, but no closing brackets
		r.Extra = []byte(`{"annotations":{"authorization.k8s.io/decision":"allow"`)
	})
	add("latency-only", func(r *timeline.Record) {
		r.Extra = []byte(`{"annotations":{"apiserver.latency.k8s.io/total":"1s"}}`)
	})
	add("query-only", func(r *timeline.Record) { r.URI = "?a=b" })
	return out
}

// TestRowEncodingReadsBack holds every encoded string to the one written:
// through Records, and through the filters that test it in SQL.
func TestRowEncodingReadsBack(t *testing.T) {
	s := openTest(t)
	recs := encodingRecords()
	ingestRecords(t, s, recs, 0)
	got := collect(t, s, timeline.Query{})
	if len(got) != len(recs) {
		t.Fatalf("read %d records, want %d", len(got), len(recs))
	}
	for i, r := range got {
		w := recs[i]
		type strs struct{ AuditID, UID, URI, Extra string }
		if diff := gocmp.Diff(strs{w.AuditID, w.Object.UID, w.URI, string(w.Extra)},
			strs{r.AuditID, r.Object.UID, r.URI, string(r.Extra)}); diff != "" {
			t.Errorf("record %d (%q): (-want +got)\n%s", i, w.AuditID, diff)
		}
		if (w.Extra == nil) != (r.Extra == nil) {
			t.Errorf("record %d: extra nil %v, want %v", i, r.Extra == nil, w.Extra == nil)
		}
		for _, expr := range []string{
			`auditID == ` + quote(w.AuditID), `uid == ` + quote(w.Object.UID), `requestURI == ` + quote(w.URI),
			`requestURI.startsWith(` + quote(w.URI) + `)`, `auditID.endsWith(` + quote(w.AuditID) + `)`,
		} {
			f, err := timeline.CompileFilter(expr)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, residual := recordQuery(timeline.Query{Where: f}); residual {
				t.Fatalf("%s: no complete SQL form", expr)
			}
			ids := idsOf(collect(t, s, timeline.Query{Where: f}))
			if !slices.Contains(ids, r.ID) {
				t.Errorf("%s: matched %v, not record %d", expr, ids, r.ID)
			}
		}
	}

	// The canonical forms are stored encoded.
	var blobs, tpls, splits int
	if err := s.db.QueryRow(`SELECT sum(typeof(audit_id) = 'blob'), sum(uri_tpl != 0), sum(extra_dict != 0) FROM record`).
		Scan(&blobs, &tpls, &splits); err != nil {
		t.Fatal(err)
	}
	if blobs != 1 || tpls != 6 || splits != 3 {
		t.Errorf("stored %d audit IDs as BLOBs, %d URIs as templates, %d extras split; want 1, 6, 3", blobs, tpls, splits)
	}
}

func quote(s string) string {
	b := []byte{'"'}
	for _, c := range []byte(s) {
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, []byte(`\x`)...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}

func idsOf(rs []*timeline.Record) []int64 {
	var ids []int64
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

// TestMigrationEncodesRows converts a timeline written by schema 9 and
// reads back what a timeline written by this schema reads.
func TestMigrationEncodesRows(t *testing.T) {
	ctx := context.Background()
	recs := encodingRecords()
	recs = append(recs, rollupRecords()...)

	fresh := openTest(t)
	ingestRecords(t, fresh, recs, 0)
	want := collect(t, fresh, timeline.Query{})

	file := filepath.Join(t.TempDir(), "old.db")
	old := openVersion(t, file, 9)
	for _, r := range want { // the records as schema 9 held them
		insertV9(t, old, r)
	}
	old.Close()
	s, err := Open(ctx, file, Options{Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if diff := gocmp.Diff(want, collect(t, s, timeline.Query{})); diff != "" {
		t.Errorf("migrated records differ from fresh ones (-fresh +migrated)\n%s", diff)
	}
	// And stores them as the writer does.
	if diff := gocmp.Diff(storedRows(t, fresh.db), storedRows(t, s.db)); diff != "" {
		t.Errorf("migrated rows differ from fresh ones (-fresh +migrated)\n%s", diff)
	}
	if msg, err := s.IntegrityCheck(ctx); err != nil || msg != "ok" {
		t.Errorf("integrity_check: %q, %v", msg, err)
	}
}

// storedRows reads the encoded columns as stored, with interned parts
// resolved.
func storedRows(t *testing.T, db *sql.DB) [][]any {
	t.Helper()
	rows, err := db.Query(`SELECT id, audit_id, uid, uri, (SELECT s FROM strs WHERE id = uri_tpl), extra,
		(SELECT s FROM strs WHERE id = extra_dict), extra_head, extra_tail FROM record ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		v := make([]any, 9)
		p := make([]any, len(v))
		for i := range v {
			p[i] = &v[i]
		}
		if err := rows.Scan(p...); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// openVersion creates a timeline at schema version v, by its migrations.
func openVersion(t *testing.T, file string, v int) *sql.DB {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", dsn(file, false, 2048))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, m := range ms[:v] {
		if _, err := db.Exec(m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
	}
	if _, err := db.Exec(`PRAGMA user_version = 9; PRAGMA application_id = 1181512812;
		INSERT INTO ingest_run (id, source, path, started_ns, status) VALUES (1, 'audit', 'x', 1, 'done')`); err != nil {
		t.Fatal(err)
	}
	return db
}

// insertV9 writes r as schema 9 held it: strings as they are.
func insertV9(t *testing.T, db *sql.DB, r *timeline.Record) {
	t.Helper()
	o := &r.Object
	ids := make([]any, 0, 15)
	for _, s := range []string{string(r.Source), o.Group, o.Version, o.Resource, o.Subresource, o.Kind, o.Namespace,
		o.Name, r.Verb, r.Reason, r.User, r.UserAgent, r.SourceIP, r.Type, r.Level} {
		var id int64
		if err := db.QueryRow(`INSERT INTO strs (s) VALUES (?) ON CONFLICT (s) DO UPDATE SET s = s RETURNING id`, s).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var extra any
	if r.Extra != nil {
		extra = string(r.Extra)
	}
	args := append([]any{r.ID, r.ID, ns(r.Time)}, ids[:8]...)
	args = append(args, o.UID)
	args = append(args, ids[8:13]...)
	args = append(args, r.Code, ids[13], ids[14], int64(r.Latency), int64(r.Stages), r.AuditID, r.URI, r.Message,
		r.Evidence.Run, r.Evidence.Line, extra)
	if _, err := db.Exec(`INSERT INTO record (id, key, time_ns, source, api_group, api_version, resource, subresource, kind,
		namespace, name, uid, verb, reason, user, user_agent, source_ip, code, type, level, latency_ns, stages,
		audit_id, uri, message, run_id, line, extra)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...); err != nil {
		t.Fatal(err)
	}
}

// FuzzRowEncoding holds the Go encodings and their SQL decodings to the
// strings encoded, whatever the bytes.
func FuzzRowEncoding(f *testing.F) {
	for _, r := range encodingRecords() {
		f.Add(r.AuditID, r.URI, r.Object.Namespace, r.Object.Name, string(r.Extra))
	}
	s := openTest(f)
	f.Fuzz(func(t *testing.T, id, uri, namespace, name, extra string) {
		if got := decodeID(encodeID(id)); got != id {
			t.Errorf("id %q reads back %q", id, got)
		}
		tpl, rest := encodeURI(uri, namespace, name)
		if got := decodeURI(tpl, namespace, name, rest); got != uri {
			t.Errorf("uri %q reads back %q", uri, got)
		}
		p := encodeExtra([]byte(extra))
		if got := string(p.appendDecoded(nil)); got != extra {
			t.Errorf("extra %q reads back %q", extra, got)
		}
		// SQLite's decoding of the same parts.
		var sid, suri string
		var sextra sql.NullString
		err := s.db.QueryRow(`WITH r AS (SELECT ? AS audit_id, ? AS tpl, ? AS ns, ? AS nm, ? AS rest,
			? AS extra, ? AS head, ? AS dict, ? AS tail)
			SELECT `+idSQL("r.audit_id")+`, replace(replace(r.tpl, char(1), r.ns), char(2), r.nm) || r.rest,
			COALESCE(r.extra, NULLIF(replace(r.head, char(1), '`+latencyKey+`') || r.dict || replace(r.tail, char(1), '`+latencyKey+`'), ''))
			FROM r`, encodeID(id), tpl, namespace, name, rest, p.whole, p.head, p.dict, p.tail).Scan(&sid, &suri, &sextra)
		if err != nil {
			t.Fatal(err)
		}
		if sid != id || suri != uri || sextra.String != extra || sextra.Valid != (extra != "") {
			t.Errorf("SQLite reads back %q, %q, %q (valid %v); want %q, %q, %q", sid, suri, sextra.String, sextra.Valid, id, uri, extra)
		}
	})
}

// BenchmarkEncodeRow measures the writer's encoding of one audit record's
// long strings (interning aside): audit ID, uid, URI and extra.
func BenchmarkEncodeRow(b *testing.B) {
	uri := "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-0151?timeout=10s"
	extra := []byte(extraMD)
	for b.Loop() {
		encodeID(uuidA)
		encodeID(uuidA)
		encodeURI(uri, "kube-node-lease", "node-0151")
		encodeExtra(extra)
	}
}
