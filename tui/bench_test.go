package tui

import (
	"context"
	"runtime"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/faultline/faultline/timeline/sqlite"
	"github.com/faultline/faultline/timeline/sqlite/sqlitetest"
)

// benchStore opens the large benchmark timeline (sqlitetest.Bench).
func benchStore(b *testing.B) *sqlite.Store { return sqlitetest.Bench(b) }

// step runs one command to its message and feeds it to the model.
func step(m *Model, cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	if batch, ok := msg.(tea.BatchMsg); ok {
		var next []tea.Cmd
		for _, c := range batch {
			next = append(next, step(m, c))
		}
		return tea.Batch(next...)
	}
	_, next := m.Update(msg)
	return next
}

// BenchmarkFirstFrame measures, at 120x40, the time from start to the first
// frame that shows data: the bounds, then the first histogram chunk (the
// analyses run in the background and are not waited for).
func BenchmarkFirstFrame(b *testing.B) {
	s := benchStore(b)
	for b.Loop() {
		m := New(context.Background(), s, Options{NoColor: true})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		next := step(m, m.start(opBounds, "bounds", m.boundsCmd))
		// next batches the first histogram chunk and the first rows.
		step(m, next)
		if m.loaded == 0 {
			b.Fatal("no histogram column counted")
		}
		_ = m.View()
	}
}

// BenchmarkHistogramFull counts every column of the whole span at 120x40.
func BenchmarkHistogramFull(b *testing.B) {
	s := benchStore(b)
	for b.Loop() {
		m := New(context.Background(), s, Options{NoColor: true})
		m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
		step(m, m.start(opBounds, "bounds", m.boundsCmd))
		for _, c := range [...]tea.Cmd{m.start(opHistogram, "h", m.histogramCmd(0, false))} {
			for next := c; m.badLoaded < len(m.buckets); {
				next = step(m, next)
			}
		}
	}
}

// BenchmarkCursorMove is one key press that changes the bucket: Update and
// View, the frame the user sees at once (the rows of the new bucket follow
// from a tea.Cmd, measured by BenchmarkBucketRows).
func BenchmarkCursorMove(b *testing.B) {
	s := benchStore(b)
	m := loadedModel(b, s)
	right, left := tea.KeyMsg{Type: tea.KeyRight}, tea.KeyMsg{Type: tea.KeyLeft}
	i := 0
	for b.Loop() {
		k := right
		if (i/50)%2 == 1 {
			k = left
		}
		i++
		m.Update(k)
		_ = m.View()
	}
	reportMemory(b)
}

// BenchmarkBucketRows reads a screenful of records of a bucket (about
// 90,000 records a bucket on the 10 M timeline): the virtualized list.
func BenchmarkBucketRows(b *testing.B) {
	s := benchStore(b)
	m := loadedModel(b, s)
	i := 0
	for b.Loop() {
		m.cursor = i % len(m.buckets)
		i += 7
		step(m, m.fetchRows())
		_ = m.View()
	}
}

func loadedModel(b *testing.B, s *sqlite.Store) *Model {
	m := New(context.Background(), s, Options{NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	next := step(m, m.start(opBounds, "bounds", m.boundsCmd))
	for m.badLoaded < len(m.buckets) && next != nil {
		next = step(m, next)
	}
	return m
}

func reportMemory(b *testing.B) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MiB")
}
