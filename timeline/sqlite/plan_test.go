package sqlite

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/timeline"
)

// planStatement is one statement the store runs for an analysis, and the
// index its plan must use.
type planStatement struct {
	name  string
	sql   string
	args  []any
	index string // an index (or "PRIMARY KEY") the plan names
}

// planStatements are the statements the analyses run against record (and
// the rollup), built by the store's own query builders where it has them.
func planStatements(t testing.TB) []planStatement {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	since, until := t0, t0.Add(time.Hour)
	var out []planStatement
	records := func(name, where string, q timeline.Query, index string) {
		t.Helper()
		if where != "" {
			f, err := timeline.CompileFilter(where)
			if err != nil {
				t.Fatal(err)
			}
			q.Where = f
		}
		s, args, _ := recordQuery(q)
		out = append(out, planStatement{name, s, args, index})
	}
	window := timeline.Query{Since: since, Until: until}
	records("actor: records near a write (actor.go)", "", window, "record_time_key")
	records("investigate: the last records before (investigate.go)", "", timeline.Query{Until: until, Desc: true, Limit: 1000}, "record_time_key")
	records("timeline, all records", "", timeline.Query{}, "record_time_key")
	records("timeline --limit 1: the first record (timeline.go)", "", timeline.Query{Limit: 1}, "record_time_key")
	records("timeline --limit 1 --desc: the last record (timeline.go)", "", timeline.Query{Limit: 1, Desc: true}, "record_time_key")
	records("controlplane restarts: apiserver lists (restarts.go)",
		`user == "system:apiserver" && verb in ["list", "watch"] && resource != ""`, window, "record_user")
	records("outcome: default bad requests (outcome.go)",
		`code >= 400 && (code == 429 || code >= 500 || (code in [401, 403] && user.startsWith("system:serviceaccount:") && !user.startsWith("system:serviceaccount:kube-system:")) || `+
			`(code == 403 && verb == "create" && resource == "pods" && subresource == "" && ns != "kube-system")) && resource != ""`,
		window, "COVERING INDEX record_error")
	records("outcome: default bad states (outcome.go)",
		`reason in ["Failed", "OOMKilled", "BackOff", "Evicted"] || (reason != "" && type == "Warning" && source in ["event", "status"] && kind == "Pod") || `+
			`(reason != "" && reason != "Ready" && source == "status" && kind == "Node")`, window, "record_reason")
	records("identity: deletions of ConfigMaps (identity.go)",
		`resource == "configmaps" && group == "" && subresource == "" && verb == "delete" && code > 0 && code < 400`, timeline.Query{}, "record_resource")
	records("investigate: the delete of an object a failure names (writes.go)",
		`resource == "serviceaccounts" && name == "trainer" && (ns == "ml" || ns == "") && subresource == "" && verb == "delete" && code > 0 && code < 400`,
		timeline.Query{Since: since, Until: until, Limit: 1, Desc: true}, "record_resource")
	records("outcome: default good (outcome.go)",
		`source == "status" && reason in ["Ready", "Running", "Succeeded", "Complete"]`, window, "record_reason")
	records("investigate: writes to an object (writes.go)",
		`resource == "pods" && ns == "llm-pretrain" && name == "w-1" && verb in ["create", "update", "patch", "delete"] && code < 400`,
		window, "record_object")
	records("investigate: denials of a user (access.go)",
		`user == "system:serviceaccount:ml:w" && code in [401, 403]`, timeline.Query{Since: since, Until: until, Limit: 1}, "record_user")
	records("investigate: the user's last allowed access (access.go)",
		`user == "system:serviceaccount:ml:w" && verb == "get" && resource == "secrets" && ns == "ml" && code < 400`,
		timeline.Query{Since: since, Until: until, Limit: 1, Desc: true}, "record_user")
	records("investigate: RBAC changes (access.go)",
		`((resource in ["roles", "rolebindings"] && ns == "ml") || resource in ["clusterroles", "clusterrolebindings"]) && group == "rbac.authorization.k8s.io" && verb in ["update", "patch", "delete"] && code < 400`,
		window, "record_resource")
	records("identity: runs (runs.go), by resource and verb", `source == "versions" && resource == "jobruns" && verb == "run"`, timeline.Query{}, "record_resource")
	records("bench: node lists failing", `verb == "list" && code >= 500 && user.startsWith("system:node:")`, timeline.Query{}, "COVERING INDEX record_error")
	records("bench: 429s in a namespace", `code == 429 && ns == "llm-pretrain"`, timeline.Query{}, "COVERING INDEX record_error")
	records("bench: one node's updates", `user == "system:node:node-0042" && verb == "update"`, timeline.Query{}, "record_user")
	records("bench: mpijob creates and deletes", `resource == "mpijobs" && verb in ["create", "delete"]`, timeline.Query{}, "record_resource")
	records("bench: slow requests in a namespace", `ns == "vision-train" && latency > duration("5s")`, timeline.Query{}, "record_object")
	records("timeline --where auditID (no index: a scan)", `auditID == "0b6a7d3e-2f1c-4f57-9d0c-3c8f1f3c2a11"`, window, "record_time_key")

	lo, hi := since.UnixNano(), until.UnixNano()
	add := func(name, sql, index string, args ...any) { out = append(out, planStatement{name, sql, args, index}) }
	add("histogram, no filter (histogram.go)",
		"SELECT (r.time_ns - ?) / ? AS b, count(*) FROM record r WHERE r.time_ns >= ? AND r.time_ns < ? GROUP BY b",
		"record_time_key", lo, int64(time.Second), lo, hi)
	add("bounds (read.go)", "SELECT min(time_ns) FROM record WHERE time_ns > ?", "record_time_key", int64(noTime))
	add("gaps: first and last time of each bucket (read.go)", `SELECT coalesce((SELECT s FROM strs WHERE id = source), '') AS src, min(time_ns) AS lo, max(time_ns)
			FROM record WHERE time_ns != ?1
			GROUP BY source, CASE WHEN time_ns < 0 THEN (time_ns + 1) / ?2 - 1 ELSE time_ns / ?2 END ORDER BY src, lo`, "", int64(noTime), int64(time.Minute))
	add("live objects: deletions (read.go)", `SELECT r.uid FROM record r
		WHERE r.resource = (SELECT id FROM strs WHERE s = ?) AND r.verb = (SELECT id FROM strs WHERE s = 'deleted')
		AND r.api_group = (SELECT id FROM strs WHERE s = ?)`, "record_resource", "pods", "")
	add("bisect: sources in a window (bisect.go)", `SELECT (SELECT s FROM strs WHERE id = r.source), count(*) FROM record r
		WHERE r.time_ns >= ? AND r.time_ns < ? GROUP BY r.source`, "record_time_key", lo, hi)
	add("write: the request held under a key (write.go)", heldStaged, "record_time_key", int64(1), int64(1))
	add("write: the whole record held under a key (write.go)", heldWhole, "record_key_whole", int64(1))
	add("rollup: requests per second (rollup.go)", secondsRead, "PRIMARY KEY", 0, 1)
	add("rollup: count of the seconds of a window (rollup.go)", secondsCount, "PRIMARY KEY", 0, 1)
	add("rollup: stats of a window (rollup.go)", `SELECT class, minute, code, bucket, n, etcd_lists, unpaged_lists, lat_sum,
		lat_max, apf_wait_max FROM req_stat WHERE minute >= ? AND minute < ? ORDER BY minute, class, code, bucket`, "PRIMARY KEY", 0, 1)
	add("rollup: summary over all (rollup.go)", `SELECT class, min(minute), code, bucket, sum(n), sum(etcd_lists), sum(unpaged_lists), sum(lat_sum),
		max(lat_max), max(apf_wait_max) FROM req_stat WHERE ? < ? GROUP BY class, code, bucket
		ORDER BY class, code, bucket`, "req_stat_class", 0, 1)
	add("rollup: clients over all (rollup.go)", `SELECT q.class, min(q.minute), q.user, sum(q.n), max(q.minute) FROM req_client q
		WHERE ? < ? GROUP BY q.class, q.user ORDER BY q.class, q.user`, "req_client_class", 0, 1)
	add("slow requests of a window (slow.go)", slowRows, "PRIMARY KEY", 0, 1)
	add("count of the slow requests of a window (slow.go)", slowCount, "PRIMARY KEY", 0, 1)
	changes, args := versionQuery(timeline.ChangesBetween(since, until, 200))
	add("bisect: the changes of a window (read.go)", changes, "object_version_time", args...)
	return out
}

var planIndex = regexp.MustCompile(`USING (?:COVERING )?INDEX (\w+)|USING (INTEGER PRIMARY KEY|PRIMARY KEY)`)

// TestQueryPlans prints the plan of every statement in planStatements as a
// Markdown table (SCHEMA.md, "Indexes and the statements that use them")
// and checks that each uses its index. It plans them as on the 10 M-record
// benchmark timeline: on an empty one that holds that timeline's
// statistics (benchStats; the planner reads nothing else, as this SQLite
// keeps no sqlite_stat4), or on a real one, FAULTLINE_PLAN_DB=/path/to/10m.db
// (opened read-only).
//
// The statistics matter: record_reason is empty on a timeline of audit
// logs alone ("0 0 0"), and a filter of reasons ORed with "any reason, of
// a Warning about a Pod" (the default bad states) was planned as a scan
// of the window by time, 7.3 M records read for none kept, until the
// compiler gave the planner a range on reason (where.go, factReasonSQL).
func TestQueryPlans(t *testing.T) {
	file := os.Getenv("FAULTLINE_PLAN_DB")
	var s *Store
	if file == "" {
		s = openTest(t)
		for _, q := range []string{"ANALYZE", "DELETE FROM sqlite_stat1"} {
			if _, err := s.db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		for _, st := range benchStats {
			if _, err := s.db.Exec("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, NULLIF(?, ''), ?)", st[0], st[1], st[2]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.db.Exec("ANALYZE sqlite_schema"); err != nil { // the planner reads them again
			t.Fatal(err)
		}
	} else {
		var err error
		if s, err = Open(context.Background(), file, Options{ReadOnly: true}); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
	}
	used := map[string]bool{}
	fmt.Println("| statement | plan |\n|---|---|")
	for _, st := range planStatements(t) {
		var plan []string
		for _, detail := range queryPlan(t, s, st.sql, st.args...) {
			if !strings.Contains(detail, "strs") && !strings.Contains(detail, "SUBQUERY") && !strings.Contains(detail, "BLOOM") {
				plan = append(plan, detail) // the strs lookups of the select list and of constants are alike everywhere
			}
			for _, m := range planIndex.FindAllStringSubmatch(detail, -1) {
				used[m[1]+m[2]] = true
			}
		}
		text := strings.Join(plan, "; ")
		fmt.Printf("| %s | %s |\n", st.name, strings.ReplaceAll(text, "|", `\|`))
		if st.index != "" && !strings.Contains(text, st.index) {
			t.Errorf("%s: plan %q does not use %s", st.name, text, st.index)
		}
	}
	var names []string
	rows, err := s.db.Query(`SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name IN ('record', 'req_stat', 'req_client')
		AND name NOT LIKE 'sqlite_autoindex%'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	slices.Sort(names)
	for _, n := range names {
		fmt.Printf("index %s used: %v\n", n, used[n])
	}
}

// benchStats are the planner's statistics (sqlite_stat1) the store's
// Analyze wrote on the 10 M-record benchmark timeline (auditgen -lines
// 10000000 -seed 2 -rr 0 -burst 3600s:120s:20; migration 0013; record_error as migration 0016 left it), table,
// index and stat.
var benchStats = [][3]string{
	{"bisect_session", "bisect_session_open", "0 0"},
	{"content", "sqlite_autoindex_content_1", "105216 1"},
	{"ingest_run", "", "1"},
	{"meta", "meta", "2 1"},
	{"object_version", "object_version_key", "105216 1"},
	{"object_version", "object_version_name", "105216 1001 1001 126 1"},
	{"object_version", "object_version_time", "105216 1"},
	{"object_version", "object_version_uid", "105216 126 1"},
	{"record", "record_error", "189781 1001 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"},
	{"record", "record_key_whole", "0 0"},
	{"record", "record_object", "7319537 1001 1001 1"},
	{"record", "record_reason", "0 0 0"},
	{"record", "record_resource", "7319537 1001 1001 1"},
	{"record", "record_time_key", "7319537 1 1"},
	{"record", "record_user", "7319537 1001 1"},
	{"req_bucket", "sqlite_autoindex_req_bucket_1", "183 1"},
	{"req_class", "sqlite_autoindex_req_class_1", "250 36 8 4 4 4 2 1"},
	{"req_client", "req_client", "1889614 1001 16 1"},
	{"req_client", "req_client_class", "1889614 334 334 1 1"},
	{"req_second", "req_second", "1918847 1001 1"},
	{"req_stat", "req_stat", "1416426 1001 16 10 1"},
	{"req_stat", "req_stat_class", "1416426 1001 1001 44 1 1 1 1 1 1 1"},
	{"strs", "sqlite_autoindex_strs_1", "318180 1"},
}

// queryPlan is the detail of each line of EXPLAIN QUERY PLAN of query.
func queryPlan(t testing.TB, s *Store, query string, args ...any) []string {
	t.Helper()
	rows, err := s.db.Query("EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}
