package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// An apiserver that accepts a LIST and never answers must not hold the
// ingest: every request but a WATCH has a deadline, its body included.
func TestDeadline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hang":
			<-r.Context().Done()
		case "/slow-body":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case "/watch":
			time.Sleep(300 * time.Millisecond) // longer than the deadline: a watch is not bounded
			io.WriteString(w, "event")
		}
	}))
	defer srv.Close()
	client := &http.Client{Transport: deadline{http.DefaultTransport, 100 * time.Millisecond}}
	tests := []struct {
		name, path string
		wantErr    string // "" when the request must succeed
	}{
		{"a LIST never answered", "/hang", "no answer within --read-timeout 100ms"},
		{"a body never finished", "/slow-body", "context deadline exceeded"},
		{"a WATCH outlives the deadline", "/watch?watch=true", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			resp, err := client.Get(srv.URL + tt.path)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if tt.wantErr == "" && err != nil {
				t.Fatalf("err = %v, want none", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
			}
			if d := time.Since(start); tt.wantErr != "" && d > 5*time.Second {
				t.Errorf("took %s: the deadline did not hold", d)
			}
		})
	}
}
