package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/faultline/faultline/ingest/yamlsafe"
)

// dumpReader reads the objects of a dump one at a time: a stream of JSON
// values or of YAML documents, each a single object or a List. It is built
// so that no bad part costs a good one:
//
//   - a List's items are decoded one by one from the stream (json.Decoder
//     tokens over "items"), never the whole document at once: memory stays
//     bounded by the largest item, whatever the dump's size, and a List cut
//     short keeps every item before the cut;
//   - an item that is not an object is a bad item, counted and named;
//   - a bad YAML document is a bad document: the documents after it are
//     still read, since YAML documents are split by their "---" lines before
//     they are parsed. (A JSON syntax error does end the file: nothing
//     reliable marks where the next value would start.)
type dumpReader struct {
	r   *bufio.Reader
	obj func(doc int, m map[string]any) // a good object of document doc
	bad func(doc int, err error)        // a bad document or item
	// stop reports that the ingest is cancelled: checked between objects.
	stop func() bool
}

// read reads the whole dump. It returns only the source's own errors
// (a cancelled read); damage and bad input go to bad.
func (d *dumpReader) read() error {
	for {
		b, err := d.r.Peek(1)
		if err != nil {
			return d.end(1, err)
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			d.r.ReadByte()
			continue
		case '{', '[':
			return d.readJSON()
		}
		return d.readYAML()
	}
}

// end turns the error that ended reading into a bad document (nil at
// io.EOF); only a cancelled read is returned.
func (d *dumpReader) end(doc int, err error) error {
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	d.bad(doc, err)
	return nil
}

func (d *dumpReader) readJSON() error {
	dec := json.NewDecoder(d.r)
	for doc := 1; !d.stop(); doc++ {
		tok, err := dec.Token()
		if err != nil {
			return d.jsonEnd(dec, doc, err)
		}
		switch tok {
		case json.Delim('{'):
			if err := d.jsonObject(dec, doc); err != nil {
				return d.jsonEnd(dec, doc, err)
			}
		case json.Delim('['): // a bare array of objects, as jq -s writes
			if err := d.jsonItems(dec, doc, ""); err != nil {
				return d.jsonEnd(dec, doc, err)
			}
		default:
			d.bad(doc, fmt.Errorf("a JSON %s, not an object", jsonKind(tok)))
		}
	}
	return nil
}

// itemError is a List item that could not be decoded.
type itemError struct {
	at  string // items[3]
	err error
}

func (e *itemError) Error() string { return e.at + ": " + e.err.Error() }
func (e *itemError) Unwrap() error { return e.err }

// jsonEnd reports what ended a JSON stream.
func (d *dumpReader) jsonEnd(dec *json.Decoder, doc int, err error) error {
	at := ""
	if ie := (*itemError)(nil); errors.As(err, &ie) {
		at = ie.at + ": "
	}
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = fmt.Errorf("%sjson: truncated at byte %d; the objects before it were kept", at, dec.InputOffset())
	case errors.As(err, &se):
		err = fmt.Errorf("%sjson: %v (byte %d); the rest of the file cannot be read reliably", at, se, se.Offset)
	}
	return d.end(doc, err)
}

// jsonObject reads a top-level object whose "{" was read: a List (its
// "items" streamed) or one object.
func (d *dumpReader) jsonObject(dec *json.Decoder, doc int) error {
	m := map[string]any{}
	list := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if key == "items" {
			list = true // a List, even a broken one, is no object to store
			t, err := dec.Token()
			if err != nil {
				return err
			}
			if t == json.Delim('[') {
				if err := d.jsonItems(dec, doc, "items"); err != nil {
					return err
				}
				continue
			}
			if err := skipValue(dec, t); err != nil {
				return err
			}
			d.bad(doc, fmt.Errorf("items: want an array, got a JSON %s", jsonKind(t)))
			continue
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return err
		}
		m[key] = v
	}
	if _, err := dec.Token(); err != nil { // "}"
		return err
	}
	if !list {
		d.obj(doc, m)
	}
	return nil
}

// jsonItems reads the elements of an array whose "[" was read, and its "]".
func (d *dumpReader) jsonItems(dec *json.Decoder, doc int, field string) error {
	for i := 0; dec.More(); i++ {
		if d.stop() {
			return nil
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return &itemError{fmt.Sprintf("%s[%d]", field, i), err}
		}
		if m, ok := v.(map[string]any); ok {
			d.obj(doc, m)
			continue
		}
		d.bad(doc, fmt.Errorf("%s[%d]: a JSON %s, not an object", field, i, jsonKind(v)))
	}
	_, err := dec.Token() // "]"
	return err
}

// skipValue consumes the rest of a value whose first token was t.
func skipValue(dec *json.Decoder, t json.Token) error {
	depth := 0
	for {
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
		var err error
		if t, err = dec.Token(); err != nil {
			return err
		}
	}
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Delim:
		if v == json.Delim('{') {
			return "object"
		}
		return "array"
	}
	return "value"
}

// readYAML splits the stream into documents at their "---" lines and
// reads each on its own, so one bad document costs only itself.
func (d *dumpReader) readYAML() error {
	var (
		doc   bytes.Buffer
		n     = 0 // documents with content so far
		start = 1 // line the current document starts on
		line  = 0
	)
	flush := func() {
		if len(bytes.TrimSpace(doc.Bytes())) == 0 {
			doc.Reset()
			return
		}
		n++
		if err := d.yamlDoc(n, doc.Bytes()); err != nil {
			d.bad(n, fmt.Errorf("line %d: %w", start, err))
		}
		doc.Reset()
	}
	for !d.stop() {
		l, err := d.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			doc.Write(l) // a long line: the rest follows
			continue
		}
		if len(l) > 0 {
			line++
		}
		if sep, rest := yamlSeparator(l); sep {
			flush()
			start = line + 1 // the document's first line
			if len(bytes.TrimSpace(rest)) > 0 {
				start = line
			}
			doc.Write(rest)
		} else if !isDocEnd(l) {
			doc.Write(l)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				// The document cut short (by damage, or Ctrl-C) is not read.
				return d.end(n+1, err)
			}
			flush()
			return nil
		}
	}
	return nil
}

// yamlSeparator reports a "---" document marker line and what follows it
// on the line.
func yamlSeparator(l []byte) (bool, []byte) {
	if !bytes.HasPrefix(l, []byte("---")) {
		return false, nil
	}
	rest := l[3:]
	if len(bytes.TrimSpace(rest)) == 0 {
		return true, nil
	}
	if rest[0] == ' ' || rest[0] == '\t' {
		return true, rest
	}
	return false, nil
}

func isDocEnd(l []byte) bool { return string(bytes.TrimRight(l, "\r\n")) == "..." }

// yamlDoc reads one YAML document: an object or a List.
func (d *dumpReader) yamlDoc(doc int, b []byte) error {
	js, err := yamlsafe.ToJSON(b)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("a YAML %s, not an object", jsonKind(v))
	}
	items, isList := m["items"].([]any)
	if !isList {
		d.obj(doc, m)
		return nil
	}
	for i, it := range items {
		if im, ok := it.(map[string]any); ok {
			d.obj(doc, im)
			continue
		}
		d.bad(doc, fmt.Errorf("items[%d]: a YAML %s, not an object", i, jsonKind(it)))
	}
	return nil
}
