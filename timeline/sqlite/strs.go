package sqlite

import (
	"strings"
	"sync"
)

// maxCachedStrs bounds the string-id cache, so memory stays flat however many
// distinct names a source holds; past it the cache starts again.
const maxCachedStrs = 1 << 18

// strCache maps dictionary strings to their ids.
type strCache struct {
	mu sync.Mutex
	m  map[string]int64
}

func (c *strCache) get(s string) (int64, bool) {
	c.mu.Lock()
	id, ok := c.m[s]
	c.mu.Unlock()
	return id, ok
}

func (c *strCache) put(s string, id int64) {
	c.mu.Lock()
	if len(c.m) >= maxCachedStrs {
		clear(c.m)
	}
	// A copy: s may share a decoded line's buffer, which the cache would
	// otherwise keep whole for as long as it keeps s.
	c.m[strings.Clone(s)] = id
	c.mu.Unlock()
}

func (c *strCache) del(s string) {
	c.mu.Lock()
	delete(c.m, s)
	c.mu.Unlock()
}

func (s *Store) strCache() *strCache { return s.cache }
