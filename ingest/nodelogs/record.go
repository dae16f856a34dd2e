package nodelogs

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/faultline/faultline/timeline"
)

// MaxMessage is the longest message a record keeps, in bytes; a longer
// one is cut at a character boundary.
const MaxMessage = 4 << 10

// newRecord maps a matched line to its record on the node.
func newRecord(e *found) *timeline.Record {
	m := &e.m
	msg := clip(e.msg)
	comp := e.component
	if comp == "" {
		comp = m.Component
	}
	t := e.time.UTC()
	return &timeline.Record{
		Key:     "node\x00" + e.node + "\x00" + t.Format(time.RFC3339Nano) + "\x00" + m.Reason + "\x00" + msg,
		Time:    t,
		Source:  timeline.SourceNode,
		Object:  timeline.ObjectRef{Kind: "Node", Resource: "nodes", Name: e.node},
		Reason:  m.Reason,
		Code:    m.Code,
		Type:    m.Type(),
		Message: msg,
		Extra:   extra(m, comp),
	}
}

// clip trims a message of blanks and cuts it to MaxMessage bytes, at a
// character boundary; invalid UTF-8 is replaced first.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= MaxMessage {
		return s
	}
	cut := MaxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// extra is the record's Extra: the component and what the match found,
// with an Xid's documented meaning, origin and action. Its keys are
// sorted (encoding/json sorts a map's), so the same line gives the same
// bytes.
func extra(m *Match, component string) json.RawMessage {
	x := map[string]any{"component": component}
	set := func(k, v string) {
		if v != "" {
			x[k] = v
		}
	}
	set("pci", m.PCI)
	set("process", m.Process)
	set("iface", m.Iface)
	set("pod", m.Pod)
	set("podUID", m.PodUID)
	set("resource", m.Resource)
	if m.PID > 0 {
		x["pid"] = m.PID
	}
	if m.Rank >= 0 {
		x["rank"] = m.Rank
	}
	if m.SXid > 0 {
		x["sxid"] = m.SXid
	}
	if m.Reason == ReasonXid {
		xid := LookupXid(m.Code)
		x["meaning"], x["origin"] = xid.Meaning, xid.Origin
		set("action", xid.Action)
	}
	b, _ := json.Marshal(x) // strings and ints: it cannot fail
	return b
}
