package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/faultline/faultline/timeline"
	"github.com/faultline/faultline/timeline/sqlite"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

func TestSeries(t *testing.T) { timelinetest.CheckSeries(t, sqlitetest.New(t)) }

// TestSeriesSurviveReopen reads series written by another Store on the
// same file: the dictionary is read from the file, not from the writer's
// cache.
func TestSeriesSurviveReopen(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "t.db")
	s, err := sqlite.Open(ctx, file, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	timelinetest.CheckSeries(t, s)
	s.Close()
	r, err := sqlite.Open(ctx, file, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for _, err := range r.Series(ctx, timeline.SeriesQuery{Metric: "up"}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("read %d series of up after reopening, want 2", n)
	}
}
