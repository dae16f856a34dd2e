package resolver

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/dns/dnsmessage"
)

func TestCandidates(t *testing.T) {
	search := SearchPath("ml", "cluster.local")
	tests := []struct {
		name  string
		ndots int
		want  []string
	}{
		{"web.shop", 5, []string{"web.shop.ml.svc.cluster.local.", "web.shop.svc.cluster.local.", "web.shop.cluster.local.", "web.shop."}},
		{"web.shop", 1, []string{"web.shop.", "web.shop.ml.svc.cluster.local.", "web.shop.svc.cluster.local.", "web.shop.cluster.local."}},
		{"web.shop.svc.cluster.local.", 5, []string{"web.shop.svc.cluster.local."}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, Candidates(tc.name, search, tc.ndots)); diff != "" {
			t.Errorf("Candidates(%q, ndots %d) (-want +got):\n%s", tc.name, tc.ndots, diff)
		}
	}
}

// server answers web.shop.svc.cluster.local. with an address (A) or none
// (AAAA), never answers names under drop., and NXDOMAIN to the rest.
func server(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dnsmessage.Message
			if m.Unpack(buf[:n]) != nil || len(m.Questions) != 1 {
				continue
			}
			q := m.Questions[0]
			if strings.HasPrefix(q.Name.String(), "drop.") {
				continue
			}
			m.Header.Response = true
			switch {
			case q.Name.String() != "web.shop.svc.cluster.local.":
				m.Header.RCode = dnsmessage.RCodeNameError
			case q.Type == dnsmessage.TypeA:
				m.Answers = []dnsmessage.Resource{{Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET},
					Body: &dnsmessage.AResource{A: [4]byte{10, 96, 0, 7}}}}
			}
			out, _ := m.Pack()
			_, _ = pc.WriteTo(out, addr)
		}
	}()
	return pc.LocalAddr().String()
}

func TestLookup(t *testing.T) {
	conn, err := net.Dial("udp", server(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var id uint16
	ids := func() uint16 { id++; return id }
	o := Options{Search: SearchPath("ml", "cluster.local"), Ndots: 5, Timeout: 100 * time.Millisecond, Attempts: 2, AAAA: true}
	buf := make([]byte, 1232)

	r, err := Lookup(conn, buf, "web.shop", o, ids)
	if err != nil {
		t.Fatal(err)
	}
	// ml.svc: NXDOMAIN twice, then svc: found.
	if diff := cmp.Diff(Result{Queries: 4, Answered: 4, Found: true}, r); diff != "" {
		t.Errorf("web.shop (-want +got):\n%s", diff)
	}
	r, err = Lookup(conn, buf, "drop.shop.", o, ids)
	var na *NoAnswerError
	if !errors.As(err, &na) || na.Tried != "drop.shop." {
		t.Fatalf("drop.shop.: got %v, want a NoAnswerError for drop.shop.", err)
	}
	if diff := cmp.Diff(Result{Queries: 4}, r); diff != "" {
		t.Errorf("drop.shop. (-want +got):\n%s", diff)
	}
}
