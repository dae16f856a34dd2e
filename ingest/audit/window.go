package audit

import (
	"bytes"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
)

// peekReceived returns when the request of a plain audit Event line was
// received, read from its top-level requestReceivedTimestamp without
// decoding the rest: a line outside the window then costs one walk over
// its top-level keys instead of a decode. ok is false whenever the full
// decode could see the line otherwise, and the line is decoded as usual:
//
//   - the line does not start with '{' (a CloudWatch "TIMESTAMP {json}");
//   - a top-level key is an envelope's (items, properties, message...,
//     timestamp, time): the records are then the envelope's;
//   - a key is duplicated, escaped, not ASCII, or folds onto a known key
//     without being it (encoding/json matches keys without regard to case);
//   - kind is there and is not "Event";
//   - requestReceivedTimestamp is missing, not a string, empty, or does not
//     parse as the decoder parses it.
//
// When ok is true and the line decodes into records at all, it decodes
// into one, received at the time returned (FuzzPeekReceived). A line
// skipped by its time is not decoded further, so a problem elsewhere in it
// goes unreported: it was not asked for.
func peekReceived(line []byte) (time.Time, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' || bytes.IndexByte(line, 0) >= 0 {
		return time.Time{}, false
	}
	var (
		mask     uint64
		received string
		ok       = true
	)
	gjson.Parse(unsafe.String(unsafe.SliceData(line), len(line))).ForEach(func(key, v gjson.Result) bool {
		bit := eventKeyIndex(key)
		if bit < 0 {
			ok = !foldsOnto(key, eventKeys)
			return ok
		}
		if bit >= firstEnvelopeKey || mask&(1<<bit) != 0 {
			ok = false
			return false
		}
		mask |= 1 << bit
		switch bit {
		case 0: // kind
			ok = v.Type == gjson.String && v.Str == "Event"
		case 15: // requestReceivedTimestamp
			ok = v.Type == gjson.String && v.Str != ""
			received = v.Str
		}
		return ok
	})
	if !ok || received == "" {
		return time.Time{}, false
	}
	t, err := parseTime("requestReceivedTimestamp", received)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}
