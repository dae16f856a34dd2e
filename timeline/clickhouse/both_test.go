package clickhouse

import (
	"context"
	"errors"
	"testing"
)

// TestBoth: the error of the function that failed first is returned, not
// the cancellation it caused in the other, and both have ended.
func TestBoth(t *testing.T) {
	boom := errors.New("boom")
	fails := func(context.Context) error { return boom }
	waits := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	ok := func(context.Context) error { return nil }
	for _, tc := range []struct {
		name string
		f, g func(context.Context) error
		want error
	}{
		{"both well", ok, ok, nil},
		{"f fails", fails, waits, boom},
		{"g fails", waits, fails, boom},
		{"g fails alone", ok, fails, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := both(context.Background(), tc.f, tc.g); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("both: %v, want %v", err, tc.want)
			}
		})
	}
}
