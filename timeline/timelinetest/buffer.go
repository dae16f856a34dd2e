package timelinetest

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer that a store's goroutines may write to
// (as a logger's output) while a test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *SyncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// String is what was written and not yet taken.
func (w *SyncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// Take returns what was written since the last Take, and forgets it.
func (w *SyncBuffer) Take() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.b.String()
	w.b.Reset()
	return s
}
