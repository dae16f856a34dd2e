package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/rollup"
)

// An ingest of audit logs joins about one line in four to a record it wrote
// a moment before: a request's RequestReceived and its ResponseComplete, a
// watch's ResponseStarted and its end. Finding the held record through the
// database costs an insert that fails, a select and an update; the writer
// instead remembers the requests it added that are still open (no final
// stage yet), and joins a later stage to one of them with the update alone.
//
// What it remembers is only ever a copy of what its own committed (or
// current) transactions wrote:
//   - a batch that rolls back forgets everything;
//   - every commit writes a fresh token to meta.write_gen, and a batch that
//     finds another token there (another process wrote since) forgets
//     everything before it reads the cache;
//   - a request leaves the cache when a final stage joins it, and the cache
//     is bounded; a request not found here takes the database path, which is
//     always right.

// maxOpenRequests bounds the open-request cache: past it the cache starts
// again, and the requests it forgot take the database path.
const maxOpenRequests = 1 << 17

// openKey is where a record with stages is unique (0011_time_key.sql).
type openKey struct {
	timeNS int64
	key    int64
}

// openRequest is the held row of a request still open, as the join and the
// rollup need it.
type openRequest struct {
	id      int64
	stages  timeline.Stage
	code    int
	latency int64
	// ids of verb, api_group, resource, subresource, namespace, name, user:
	// what AddRecord compares to tell the same request from another.
	ident [7]int64
	// rq is the request's rollup class, or nil for a record the rollup
	// does not count (not audit, or without a resource).
	rq *rollup.Request
}

type openCache struct {
	mu  sync.Mutex
	m   map[openKey]*openRequest
	gen string // the write_gen token this store wrote last
}

func (c *openCache) get(k openKey) *openRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func (c *openCache) put(k openKey, o *openRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxOpenRequests {
		c.m = map[openKey]*openRequest{}
	}
	c.m[k] = o
}

func (c *openCache) del(k openKey) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}

func (c *openCache) reset() {
	c.mu.Lock()
	c.m = nil
	c.gen = ""
	c.mu.Unlock()
}

// checkGen, at the start of a batch, forgets the cache if another writer
// committed since this store's last commit.
func (c *openCache) checkGen(ctx context.Context, tx *sql.Tx) error {
	var gen string
	err := tx.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'write_gen'`).Scan(&gen)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read write_gen: %w", err)
	}
	c.mu.Lock()
	if gen != c.gen {
		c.m, c.gen = nil, ""
	}
	c.mu.Unlock()
	return nil
}

// bumpGen, inside a batch's transaction, writes a fresh token; the cache
// takes it once the transaction commits (setGen).
func bumpGen(ctx context.Context, tx *sql.Tx) (string, error) {
	var b [12]byte
	rand.Read(b[:])
	gen := hex.EncodeToString(b[:])
	_, err := tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('write_gen', ?)
		ON CONFLICT (k) DO UPDATE SET v = excluded.v`, gen)
	if err != nil {
		return "", fmt.Errorf("write write_gen: %w", err)
	}
	return gen, nil
}

func (c *openCache) setGen(gen string) {
	c.mu.Lock()
	c.gen = gen
	c.mu.Unlock()
}
