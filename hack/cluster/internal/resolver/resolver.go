// Package resolver resolves names the way a pod's C library does, against
// a DNS server of this machine: the pod's search path walked with ndots,
// A and AAAA asked together, each try waited for up to a timeout and
// retried a number of attempts (glibc's res_search with options timeout
// and attempts). hack/cluster/dnsload and the zoo's dns-storm family play
// pods with it.
package resolver

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Candidates are the names a resolver with this search path and ndots tries
// for name, in order, as absolute names (glibc's res_search): a name with
// fewer than ndots dots goes through the search path first and is asked as
// it is last; any other name the other way round.
func Candidates(name string, search []string, ndots int) []string {
	if strings.HasSuffix(name, ".") || len(search) == 0 { // absolute: no search
		return []string{strings.TrimSuffix(name, ".") + "."}
	}
	abs := name + "."
	out := make([]string, 0, len(search)+1)
	if strings.Count(name, ".") >= ndots {
		out = append(out, abs)
	}
	for _, d := range search {
		out = append(out, name+"."+d+".")
	}
	if strings.Count(name, ".") < ndots {
		out = append(out, abs)
	}
	return out
}

// SearchPath is a pod's search path in namespace ns, as the kubelet writes
// it into the pod's resolv.conf.
func SearchPath(ns, domain string) []string {
	return []string{ns + ".svc." + domain, "svc." + domain, domain}
}

// RcodeName is an rcode as DNS people say it (NXDOMAIN, not
// RCodeNameError).
func RcodeName(rc dnsmessage.RCode) string {
	switch rc {
	case dnsmessage.RCodeSuccess:
		return "NOERROR"
	case dnsmessage.RCodeFormatError:
		return "FORMERR"
	case dnsmessage.RCodeServerFailure:
		return "SERVFAIL"
	case dnsmessage.RCodeNameError:
		return "NXDOMAIN"
	case dnsmessage.RCodeNotImplemented:
		return "NOTIMP"
	case dnsmessage.RCodeRefused:
		return "REFUSED"
	}
	return fmt.Sprintf("RCODE%d", rc)
}

// Query sends one question and reads until the answer with its ID comes
// (a late answer to an earlier, timed-out query is dropped). It returns the
// rcode and the number of answer records of the asked type.
func Query(conn net.Conn, buf []byte, name string, typ dnsmessage.Type, id uint16, timeout time.Duration) (dnsmessage.RCode, int, error) {
	if err := send(conn, buf, name, typ, id); err != nil {
		return 0, 0, err
	}
	if err := conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return 0, 0, err
	}
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return 0, 0, err
		}
		resp, got, rc, answers, err := answer(buf[:n], typ)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", name, err)
		}
		if resp && got == id {
			return rc, answers, nil
		}
	}
}

// send packs and writes one question.
func send(conn net.Conn, buf []byte, name string, typ dnsmessage.Type, id uint16) error {
	qname, err := dnsmessage.NewName(name)
	if err != nil {
		return err
	}
	msg := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: id, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: qname, Type: typ, Class: dnsmessage.ClassINET}},
	}
	packed, err := msg.AppendPack(buf[:0])
	if err != nil {
		return err
	}
	_, err = conn.Write(packed)
	return err
}

// answer parses a response: its ID, rcode and the answers of type typ. A
// packet that is no response gives resp false and no error (it is read
// past).
func answer(pkt []byte, typ dnsmessage.Type) (resp bool, id uint16, rc dnsmessage.RCode, answers int, err error) {
	var p dnsmessage.Parser
	h, err := p.Start(pkt)
	if err != nil || !h.Response {
		return false, 0, 0, 0, nil
	}
	if err := p.SkipAllQuestions(); err != nil {
		return false, 0, 0, 0, err
	}
	for {
		ah, err := p.AnswerHeader()
		if errors.Is(err, dnsmessage.ErrSectionDone) {
			return true, h.ID, h.RCode, answers, nil
		}
		if err != nil {
			return false, 0, 0, 0, err
		}
		if ah.Type == typ {
			answers++
		}
		if err := p.SkipAnswer(); err != nil {
			return false, 0, 0, 0, err
		}
	}
}

// Timeout says whether err is a wait that ran out.
func Timeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Options are a pod's resolv.conf: its search path, and options ndots,
// timeout and attempts; AAAA asks for AAAA beside A, as getaddrinfo does
// for an unspecified family.
type Options struct {
	Search   []string
	Ndots    int
	Timeout  time.Duration
	Attempts int
	AAAA     bool
}

// Result counts what one lookup sent and got.
type Result struct {
	Queries, Answered int
	Found             bool // a name of the search had an address
}

// NoAnswerError is a lookup whose server answered none of the attempts of
// one of its tries: glibc stops the search there and getaddrinfo fails
// with EAI_AGAIN.
type NoAnswerError struct{ Name, Tried string }

func (e *NoAnswerError) Error() string {
	return "[Errno -3] Temporary failure in name resolution: " + e.Name
}

// Lookup resolves name as getaddrinfo does with glibc: each name of the
// search in turn, its A and AAAA questions sent together on conn and their
// answers waited for up to Timeout, the pair sent again up to Attempts
// times while an answer is missing. A name with an address ends the search
// (Found); one answered without (NXDOMAIN, or no record of the type) moves
// on to the next; one whose attempts all went unanswered ends it with a
// NoAnswerError. ids draws the queries' IDs.
func Lookup(conn net.Conn, buf []byte, name string, o Options, ids func() uint16) (Result, error) {
	var r Result
	types := []dnsmessage.Type{dnsmessage.TypeA}
	if o.AAAA {
		types = append(types, dnsmessage.TypeAAAA)
	}
	for _, cand := range Candidates(name, o.Search, o.Ndots) {
		answered := false
		for range max(1, o.Attempts) {
			found, all, err := together(conn, buf, cand, types, o.Timeout, ids, &r)
			if err != nil {
				return r, err
			}
			if all {
				answered, r.Found = true, found
				break
			}
		}
		if !answered {
			return r, &NoAnswerError{Name: name, Tried: cand}
		}
		if r.Found {
			return r, nil
		}
	}
	return r, nil
}

// together sends one question per type and reads their answers until all
// came or timeout passed: found when one had an address.
func together(conn net.Conn, buf []byte, name string, types []dnsmessage.Type, timeout time.Duration, ids func() uint16, r *Result) (found, all bool, err error) {
	want := map[uint16]dnsmessage.Type{}
	for _, typ := range types {
		id := ids()
		for want[id] != 0 {
			id = ids()
		}
		if err := send(conn, buf, name, typ, id); err != nil {
			return false, false, err
		}
		want[id] = typ
		r.Queries++
	}
	if err := conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return false, false, err
	}
	for len(want) > 0 {
		n, err := conn.Read(buf)
		if Timeout(err) {
			return found, false, nil
		}
		if err != nil {
			return false, false, err
		}
		resp, id, rc, _, err := answer(buf[:n], 0)
		typ, ok := want[id]
		if err != nil || !resp || !ok {
			continue // garbled, or a late answer to an earlier try
		}
		_, _, _, answers, _ := answer(buf[:n], typ)
		delete(want, id)
		r.Answered++
		found = found || (rc == dnsmessage.RCodeSuccess && answers > 0)
	}
	return found, true, nil
}
