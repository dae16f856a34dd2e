package input

import "fmt"

// Skip is a piece of input that was not ingested, and why: a bad line of a
// log, a bad document of a dump, a resource or object a cluster would not
// give. Every ingester reports what it skips as a Skip, through an OnSkip.
type Skip struct {
	Path string // the file as in messages; "" for input that is no file (a cluster's resource)
	Line int64  // the line of Path, from 1, for input read by lines
	Doc  int    // the document of Path, from 1, for input read by documents; 0 otherwise
	Err  error
}

// Error says where and why: "audit.log:12: …" for a line, "dump.yaml:
// document 3: …" for a document, the reason alone for input that is no file.
func (s *Skip) Error() string {
	switch {
	case s.Path == "":
		return s.Err.Error()
	case s.Doc > 0:
		return fmt.Sprintf("%s: document %d: %v", s.Path, s.Doc, s.Err)
	}
	return fmt.Sprintf("%s:%d: %v", s.Path, s.Line, s.Err)
}

func (s *Skip) Unwrap() error { return s.Err }

// OnSkip hears of each piece of input skipped, as it is skipped. A nil
// OnSkip hears nothing; call it through Report.
type OnSkip func(*Skip)

// Report hands s to on, if on is set.
func (on OnSkip) Report(s *Skip) {
	if on != nil {
		on(s)
	}
}
