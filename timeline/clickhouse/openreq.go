package clickhouse

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/faultline/faultline/timeline"
)

// Requests written that await a final stage are remembered between
// flushes, so that a later stage finds its row without a lookup: a watch
// lasts minutes, and a log holds tens of thousands open at once. A later
// stage rewrites the whole row, so all of the record is kept, but packed:
// its numbers as varints, its strings after them in the same string, and
// the strings that repeat from request to request (verb, user, user agent,
// annotations...) as ids into a dictionary the set keeps. Kept decoded, a
// watch's record held about 1.5 KB (the struct, the arena of its line, its
// extra, its key, its rollup class); 131,072 of them were a live heap of
// about 195 MB, above the ingest's soft memory limit, and the collector ran
// all the time. Packed, it holds a few hundred bytes.

// maxOpen bounds the requests remembered; past it they are forgotten, and
// a late stage finds its request by the next flush's lookup instead.
const maxOpen = 1 << 17

// The dictionary stops growing at maxWords strings or maxWordBytes bytes;
// strings not in it are packed inline.
const (
	maxWords     = 1 << 16
	maxWordBytes = 8 << 20
)

// maxScratch bounds the buffer pack reuses.
const maxScratch = 64 << 10

// openSet is the requests remembered, by time and key. Guarded by the
// store's mu.
type openSet struct {
	m         map[openKey]string
	ids       map[string]uint32
	words     []string
	wordBytes int
	scratch   []byte
}

func (o *openSet) get(k openKey) (*row, bool) {
	p, ok := o.m[k]
	if !ok {
		return nil, false
	}
	r, copied, err := o.unpack(p)
	if err != nil {
		// Not reached: the set reads only what it packed. A row not
		// found takes the lookup, which is always right.
		delete(o.m, k)
		return nil, false
	}
	return &row{r: r, key: k.key, held: true, heldCopied: copied}, true
}

// put remembers r, written; copied says the failed requests' copy took it.
func (o *openSet) put(k openKey, r *timeline.Record, copied bool) {
	if o.m == nil || len(o.m) >= maxOpen {
		o.m = map[openKey]string{}
	}
	o.m[k] = o.pack(r, copied)
}

func (o *openSet) del(k openKey) { delete(o.m, k) }

// forget drops every request remembered (the dictionary stays: it holds
// only strings).
func (o *openSet) forget() { o.m = nil }

func (o *openSet) len() int { return len(o.m) }

// The fields of a record in the order they are packed: the repeated
// strings as words, then Extra (a word too), then the others inline.
func wordFields(r *timeline.Record) [14]*string {
	o := &r.Object
	return [...]*string{(*string)(&r.Source), &o.Group, &o.Version, &o.Resource, &o.Subresource, &o.Kind,
		&o.Namespace, &r.Verb, &r.Reason, &r.User, &r.UserAgent, &r.SourceIP, &r.Type, &r.Level}
}

func inlineFields(r *timeline.Record) [5]*string {
	return [...]*string{&r.Object.Name, &r.Object.UID, &r.AuditID, &r.URI, &r.Message}
}

// pack encodes r, and whether the failed requests' copy took it, in one
// string. Key and Bad are not kept: a held row is known by its key hash,
// and bad is never written.
func (o *openSet) pack(r *timeline.Record, copied bool) string {
	b := o.scratch[:0]
	c := int64(0)
	if copied {
		c = 1
	}
	for _, n := range [...]int64{r.ID, ns(r.Time), int64(r.Latency), int64(r.Code), int64(r.Stages),
		r.Evidence.Run, r.Evidence.Line, c} {
		b = binary.AppendVarint(b, n)
	}
	for _, f := range wordFields(r) {
		b = o.appendWord(b, *f)
	}
	b = o.appendWord(b, unsafe.String(unsafe.SliceData(r.Extra), len(r.Extra)))
	for _, f := range inlineFields(r) {
		b = binary.AppendUvarint(b, uint64(len(*f)))
		b = append(b, *f...)
	}
	if cap(b) <= maxScratch {
		o.scratch = b // one line's record of a megabyte is not kept for the next
	}
	return string(b)
}

// appendWord appends s as 0 (empty), id<<1|1 (a word of the dictionary)
// or len<<1 and its bytes.
func (o *openSet) appendWord(b []byte, s string) []byte {
	if s == "" {
		return append(b, 0)
	}
	id, ok := o.ids[s]
	if !ok && len(o.words) < maxWords && o.wordBytes+len(s) <= maxWordBytes {
		if o.ids == nil {
			o.ids = map[string]uint32{}
		}
		s = strings.Clone(s) // not the line's arena, nor Extra: the word outlives them
		id, ok = uint32(len(o.words)), true
		o.ids[s] = id
		o.words = append(o.words, s)
		o.wordBytes += len(s)
	}
	if ok {
		return binary.AppendUvarint(b, uint64(id)<<1|1)
	}
	b = binary.AppendUvarint(b, uint64(len(s))<<1)
	return append(b, s...)
}

// unpack decodes what pack encoded: the inline strings point into p.
func (o *openSet) unpack(p string) (r *timeline.Record, copied bool, err error) {
	d := unpacker{p: p}
	var n [8]int64
	for i := range n {
		n[i] = d.varint()
	}
	if n[7] != 0 && n[7] != 1 {
		d.bad = true // pack writes the flag as 0 or 1
	}
	copied = n[7] == 1
	r = &timeline.Record{ID: n[0], Time: fromNS(n[1]), Latency: time.Duration(n[2]), Code: int(n[3]),
		Stages: timeline.Stage(n[4]), Evidence: timeline.Evidence{Run: n[5], Line: n[6]}}
	for _, f := range wordFields(r) {
		*f = o.word(&d)
	}
	if x := o.word(&d); x != "" {
		r.Extra = []byte(x) // a copy: a record's bytes may be written to
	}
	for _, f := range inlineFields(r) {
		*f = d.str(d.uvarint())
	}
	if d.bad || d.i != len(p) {
		return nil, false, fmt.Errorf("unpack an open request: %d of %d bytes read", d.i, len(p))
	}
	return r, copied, nil
}

func (o *openSet) word(d *unpacker) string {
	t := d.uvarint()
	switch {
	case t == 0:
		return ""
	case t&1 == 0:
		return d.str(t >> 1)
	case t>>1 < uint64(len(o.words)):
		return o.words[t>>1]
	}
	d.bad = true
	return ""
}

type unpacker struct {
	p   string
	i   int
	bad bool
}

func (d *unpacker) bytes() []byte {
	return unsafe.Slice(unsafe.StringData(d.p[d.i:]), len(d.p)-d.i)
}

// varint reads what binary.AppendVarint wrote: a zig-zag uvarint.
func (d *unpacker) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *unpacker) uvarint() uint64 {
	v, n := binary.Uvarint(d.bytes())
	if n <= 0 {
		d.bad, n = true, 0
	}
	d.i += n
	return v
}

func (d *unpacker) str(n uint64) string {
	if n > uint64(len(d.p)-d.i) {
		d.bad = true
		return ""
	}
	s := d.p[d.i : d.i+int(n)]
	d.i += int(n)
	return s
}
