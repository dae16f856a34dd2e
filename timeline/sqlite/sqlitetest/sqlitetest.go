// Package sqlitetest lets the tests of other packages check what a SQLite
// timeline holds beyond what the store's roles answer, such as the rows a
// kill -9 may have left or lost, without running SQL of their own: the
// schema stays known to timeline/sqlite alone.
//
// It opens the timeline's file read-only, beside any store (or process)
// that has it open.
package sqlitetest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"

	_ "github.com/mattn/go-sqlite3" // the driver timeline/sqlite uses
)

// open opens file read-only, waiting for a writer as the store does.
func open(file string) (*sql.DB, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_busy_timeout", "5000")
	return sql.Open("sqlite3", "file:"+(&url.URL{Path: file}).EscapedPath()+"?"+q.Encode())
}

// Counts are the records a timeline holds.
type Counts struct {
	Records  int64 // records
	AuditIDs int64 // distinct audit IDs among them
}

// Count counts the records of the timeline in file.
func Count(ctx context.Context, file string) (Counts, error) {
	db, err := open(file)
	if err != nil {
		return Counts{}, err
	}
	defer db.Close()
	var c Counts
	err = db.QueryRowContext(ctx, "SELECT count(*), count(DISTINCT audit_id) FROM record").Scan(&c.Records, &c.AuditIDs)
	return c, err
}

// Print is what a timeline holds, independent of row ids and run ids: two
// timelines ingested from the same evidence print the same, whatever was
// killed and rerun on the way.
type Print struct {
	Records, Versions             int64
	RecordsHash, VersionsHash     string // of the natural keys and times
	Classes, Seconds, Requests    int64  // the request rollup: classes, per-second rows and their requests
	Stats, StatRequests, Latency  int64  // per-minute rows, their requests and latency sum
	Clients, ClientRequests, Etcd int64  // per-client rows and their requests; lists read from etcd
}

// Fingerprint reads the print of the timeline in file.
func Fingerprint(ctx context.Context, file string) (Print, error) {
	db, err := open(file)
	if err != nil {
		return Print{}, err
	}
	defer db.Close()
	var p Print
	if p.Records, p.RecordsHash, err = hash(ctx, db, "SELECT key, time_ns, '' FROM record ORDER BY key, time_ns"); err != nil {
		return p, err
	}
	if p.Versions, p.VersionsHash, err = hash(ctx, db, "SELECT key, time_ns, resource_version FROM object_version ORDER BY key, time_ns, resource_version"); err != nil {
		return p, err
	}
	for _, q := range []struct {
		sql  string
		into []any
	}{
		{"SELECT count(*) FROM req_class", []any{&p.Classes}},
		{"SELECT count(*), coalesce(sum(n), 0) FROM req_second", []any{&p.Seconds, &p.Requests}},
		{"SELECT count(*), coalesce(sum(n), 0), coalesce(sum(lat_sum), 0), coalesce(sum(etcd_lists), 0) FROM req_stat", []any{&p.Stats, &p.StatRequests, &p.Latency, &p.Etcd}},
		{"SELECT count(*), coalesce(sum(n), 0) FROM req_client", []any{&p.Clients, &p.ClientRequests}},
	} {
		if err := db.QueryRowContext(ctx, q.sql).Scan(q.into...); err != nil {
			return p, fmt.Errorf("%s: %w", q.sql, err)
		}
	}
	return p, nil
}

// hash counts the rows of a query of (int, int, text) and hashes them.
func hash(ctx context.Context, db *sql.DB, query string) (int64, string, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return 0, "", err
	}
	defer rows.Close()
	h := sha256.New()
	var n int64
	for rows.Next() {
		var a, b int64
		var c string
		if err := rows.Scan(&a, &b, &c); err != nil {
			return 0, "", err
		}
		fmt.Fprintf(h, "%d %d %s\n", a, b, c)
		n++
	}
	return n, hex.EncodeToString(h.Sum(nil))[:16], rows.Err()
}
