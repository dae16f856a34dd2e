package timeline

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MinTime and MaxTime bound the instants a timeline holds: the store keeps
// times as int64 nanoseconds since the Unix epoch, and keeps the lowest of
// them (math.MinInt64) for "no time", so that the epoch itself is a time
// like any other. Outside this range UnixNano wraps silently (year 9999
// reads back as 1816), so times outside it are refused, never stored.
var (
	MinTime = time.Unix(0, math.MinInt64+1).UTC() // 1677-09-21T00:12:43.145224193Z
	MaxTime = time.Unix(0, math.MaxInt64).UTC()   // 2262-04-11T23:47:16.854775807Z
)

// TimeRangeError is a time outside [MinTime, MaxTime]. Field names where it
// was found (a parser's field, a flag, "record time"); it may be empty.
type TimeRangeError struct {
	Field string
	Time  time.Time
}

func (e *TimeRangeError) Error() string {
	what := "time"
	if e.Field != "" {
		what = e.Field
	}
	return fmt.Sprintf("%s %s is outside the range a timeline holds (%s .. %s)", what,
		e.Time.UTC().Format(time.RFC3339Nano), MinTime.Format(time.RFC3339), MaxTime.Format(time.RFC3339))
}

// CheckTime returns a *TimeRangeError for a time a timeline cannot hold,
// and nil for the others and for the zero time ("no time"). The store calls
// it on every time it writes; a parser calls it at its own boundary, to
// name the line and field, and sets Field.
func CheckTime(t time.Time) error {
	if t.IsZero() || (!t.Before(MinTime) && !t.After(MaxTime)) {
		return nil
	}
	return &TimeRangeError{Time: t}
}

// NoTimeNS is the nanosecond count a store keeps for "no time" (a zero
// time.Time): the lowest int64, outside [MinTime, MaxTime].
const NoTimeNS = math.MinInt64

// UnixNS is the nanosecond count a store keeps for t, which must be in
// range (CheckTime) or zero (NoTimeNS).
func UnixNS(t time.Time) int64 {
	if t.IsZero() {
		return NoTimeNS
	}
	return t.UnixNano()
}

// FromUnixNS is the time a stored nanosecond count stands for (UnixNS's
// inverse), in UTC.
func FromUnixNS(n int64) time.Time {
	if n == NoTimeNS {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// BoundNS is the nanosecond count of a query bound: a time outside the
// range a timeline holds saturates to its ends (a --since in year 3000
// selects nothing, one in year 1 everything) instead of wrapping.
func BoundNS(t time.Time) int64 {
	switch {
	case t.Before(MinTime):
		return math.MinInt64 + 1
	case t.After(MaxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// KeyHash is the 64-bit integer a store keys a natural key by (Record.Key,
// VersionKey): the first 8 bytes of its sha256, big-endian.
func KeyHash(key string) int64 {
	sum := sha256.Sum256([]byte(key))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// ConflictKey is the i-th natural key a store tries for r: r.Key; then,
// when that key holds another request (another verb, user or object), the
// key extended by r's identity; then by its code and stage too; and, for
// a record without stages (a whole thing: an Event, an artifact version),
// by a digest of its content. ok is false past the last. A re-ingest finds
// each record under the same key, so ingest stays idempotent, and the later
// stages of a conflicting request find its own record.
func ConflictKey(r *Record, i int) (k string, ok bool) {
	o := &r.Object
	k = r.Key
	if i == 0 {
		return k, true
	}
	k += "\x00conflict\x00" + strings.Join([]string{r.Verb, r.User, o.Group, o.Resource, o.Subresource, o.Namespace, o.Name}, "\x00")
	if i == 1 {
		return k, true
	}
	k += "\x00" + strconv.Itoa(r.Code) + "\x00" + strconv.Itoa(int(r.Stages))
	if i == 2 {
		return k, true
	}
	if i == 3 && r.Stages == 0 {
		sum := sha256.Sum256(r.Extra)
		return k + "\x00" + hex.EncodeToString(sum[:8]), true
	}
	return "", false
}

// WallNS is the nanosecond count a store keeps for a wall-clock instant of
// a bisect session (when it started, ended, or a mark was made): a zero
// time becomes 1, so that an ended session never reads as open (0).
func WallNS(t time.Time) int64 {
	if n := UnixNS(t); n != 0 && n != NoTimeNS {
		return n
	}
	return 1
}
