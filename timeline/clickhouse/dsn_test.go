package clickhouse

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseDSN(t *testing.T) {
	for _, tc := range []struct {
		dsn    string
		want   config
		reason string // of the *DSNError; "" for none
	}{
		{dsn: "clickhouse://127.0.0.1:19001/faultline?cluster=faultline", want: config{"127.0.0.1:19001", "faultline", "faultline"}},
		{dsn: "clickhouse://ch:9000/?cluster=prod_2", want: config{"ch:9000", "faultline", "prod_2"}},
		{dsn: "clickhouse://ch:9000/evidence?cluster=c", want: config{"ch:9000", "evidence", "c"}},
		{dsn: "http://ch:8123/faultline?cluster=c", reason: "the scheme is not clickhouse"},
		{dsn: "clickhouse://ch/faultline?cluster=c", reason: "no host:port"},
		{dsn: "clickhouse://ch:9000/faultline", want: config{"ch:9000", "faultline", "faultline"}},
		{dsn: "clickhouse://ch:9000", want: config{"ch:9000", "faultline", "faultline"}},
		{dsn: "clickhouse://ch:9000/faultline?cluster=", reason: "an empty ?cluster= (leave it out for faultline)"},
		{dsn: "clickhouse://ch:9000/x;DROP?cluster=c", reason: "the database name x;DROP is not a plain identifier"},
		{dsn: "clickhouse://ch:9000/db?cluster=a-b", reason: "the cluster name a-b is not a plain identifier"},
		{dsn: "clickhouse://ch:9000/db?cluster=c&secure=1", reason: "unknown parameter secure"},
	} {
		got, err := parseDSN(tc.dsn)
		var de *DSNError
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("parseDSN(%q): %v", tc.dsn, err)
		case tc.reason != "" && !errors.As(err, &de):
			t.Errorf("parseDSN(%q) = %+v, %v; want a *DSNError", tc.dsn, got, err)
		case tc.reason != "" && de.Reason != tc.reason:
			t.Errorf("parseDSN(%q): reason %q, want %q", tc.dsn, de.Reason, tc.reason)
		case tc.reason == "":
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(config{})); diff != "" {
				t.Errorf("parseDSN(%q) (-want +got):\n%s", tc.dsn, diff)
			}
		}
	}
}

func TestRankOrdersSightings(t *testing.T) {
	const early, late = int64(-5e18), int64(1.7e18)
	// best first: a write before a read before metadata; within one kind
	// an earlier time, then any known time, before no time.
	order := []uint64{
		rank(0, early), rank(0, late), rank(0, noTime),
		rank(1, early), rank(1, late), rank(1, noTime),
		rank(2, early), rank(2, late), rank(2, noTime),
	}
	for i := 1; i < len(order); i++ {
		if order[i-1] <= order[i] {
			t.Errorf("rank %d (%#x) is not above rank %d (%#x)", i-1, order[i-1], i, order[i])
		}
	}
}
