package nodelogs

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/faultline/faultline/timeline"
)

// FieldError names the field of a line that is wrong.
type FieldError struct {
	Field, Problem string
	Err            error // a sentinel it stands for (ErrNoBootTime), or nil
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }
func (e *FieldError) Unwrap() error { return e.Err }

// ErrNoBootTime is a raw dmesg time ([ 1234.567890], seconds since boot)
// read without the node's boot time (Options.BootTime) that places it.
var ErrNoBootTime = errors.New("no boot time")

// dmesgT is the layout of dmesg -T (ctime(3), in the reader's zone: read
// as UTC).
const dmesgT = "Mon Jan _2 15:04:05 2006"

// splitTime reads the timestamp at the start of a text line and returns it
// (UTC) with the message after it:
//
//	2026-12-01T15:31:03,878276+00:00 msg     dmesg --time-format=iso
//	2026-12-01T15:31:03.878276123Z msg       RFC 3339 (kubectl logs --timestamps)
//	[Tue Dec  1 15:31:03 2026] msg           dmesg -T, read as UTC
//	[ 1234.567890] msg                       dmesg: seconds since boot (boot)
//
// with an optional syslog priority before a bracket (<3>[ 1234.5], as
// /dev/kmsg and dmesg -r give it). A line with none is a *FieldError.
func splitTime(line []byte, boot time.Time) (time.Time, []byte, error) {
	s := stripPriority(line)
	var t time.Time
	var msg []byte
	var err error
	switch {
	case len(s) > 0 && s[0] == '[':
		t, msg, err = bracketTime(s, boot)
	case len(s) > 0 && s[0] >= '0' && s[0] <= '9':
		t, msg, err = isoTime(s)
	default:
		err = errNoTime()
	}
	if err != nil {
		return time.Time{}, nil, err
	}
	if err := timeline.CheckTime(t); err != nil {
		return time.Time{}, nil, &FieldError{Field: "time", Problem: err.Error()}
	}
	return t, msg, nil
}

func errNoTime() error {
	return &FieldError{Field: "time", Problem: "no timestamp at the start of the line: want RFC 3339 (2026-12-01T15:31:03.878276Z), dmesg --time-format=iso, dmesg -T or dmesg's [seconds since boot]"}
}

// stripPriority drops a "<N>" syslog priority before a '['.
func stripPriority(s []byte) []byte {
	if len(s) < 3 || s[0] != '<' {
		return s
	}
	i := bytes.IndexByte(s[:min(len(s), 6)], '>')
	if i < 2 || !allDigits(s[1:i]) || i+1 >= len(s) || s[i+1] != '[' {
		return s
	}
	return s[i+1:]
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// bracketTime reads "[ 1234.567890] msg" (placed after boot) or
// "[Tue Dec  1 15:31:03 2026] msg".
func bracketTime(s []byte, boot time.Time) (time.Time, []byte, error) {
	end := bytes.IndexByte(s, ']')
	if end < 0 || end > 64 {
		return time.Time{}, nil, errNoTime()
	}
	inside, msg := bytes.TrimSpace(s[1:end]), bytes.TrimLeft(s[end+1:], " \t")
	if d, ok := uptime(inside); ok {
		if boot.IsZero() {
			return time.Time{}, nil, &FieldError{Field: "time", Err: ErrNoBootTime,
				Problem: fmt.Sprintf("[%s] counts seconds since the node booted: the node's boot time is needed to place it", inside)}
		}
		return boot.Add(d).UTC(), msg, nil
	}
	t, err := time.Parse(dmesgT, string(inside))
	if err != nil {
		return time.Time{}, nil, &FieldError{Field: "time", Problem: fmt.Sprintf("[%s]: want dmesg -T's [Tue Dec  1 15:31:03 2026] or dmesg's [seconds since boot]", inside)}
	}
	return t.UTC(), msg, nil
}

// uptime reads dmesg's seconds since boot ("1234.567890"), exactly.
func uptime(b []byte) (time.Duration, bool) {
	secs, frac, _ := bytes.Cut(b, []byte("."))
	if !allDigits(secs) || len(secs) > 10 || (len(frac) > 0 && !allDigits(frac)) {
		return 0, false
	}
	s, _ := strconv.ParseInt(string(secs), 10, 64)
	d := time.Duration(s) * time.Second
	scale := time.Duration(1e8)
	for i := 0; i < len(frac) && i < 9; i++ {
		d += time.Duration(frac[i]-'0') * scale
		scale /= 10
	}
	return d, true
}

// isoTime reads an RFC 3339 timestamp, with ',' or '.' before its
// fraction (dmesg --time-format=iso writes ','), and a zone as Z, +00:00
// or +0000, up to the first blank.
func isoTime(s []byte) (time.Time, []byte, error) {
	end := bytes.IndexAny(s, " \t")
	if end < 0 {
		end = len(s)
	}
	tok := s[:end]
	if len(tok) < 20 || len(tok) > 40 || tok[4] != '-' || tok[10] != 'T' {
		return time.Time{}, nil, errNoTime()
	}
	ts := string(bytes.Replace(tok, []byte(","), []byte("."), 1))
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		var err2 error
		if t, err2 = time.Parse("2006-01-02T15:04:05.999999999Z0700", ts); err2 != nil {
			return time.Time{}, nil, &FieldError{Field: "time", Problem: err.Error()}
		}
	}
	return t.UTC(), bytes.TrimLeft(s[end:], " \t"), nil
}

// journalTime reads journald's __REALTIME_TIMESTAMP: microseconds since
// the epoch, as a decimal string.
func journalTime(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, &FieldError{Field: "__REALTIME_TIMESTAMP", Problem: "missing"}
	}
	us, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, &FieldError{Field: "__REALTIME_TIMESTAMP", Problem: fmt.Sprintf("%q: want microseconds since the epoch", v)}
	}
	t := time.UnixMicro(us).UTC()
	if err := timeline.CheckTime(t); err != nil {
		return time.Time{}, &FieldError{Field: "__REALTIME_TIMESTAMP", Problem: err.Error()}
	}
	return t, nil
}
