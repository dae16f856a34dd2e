package incidentplot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/analyze/investigate"
	"github.com/faultline/faultline/analyze/outcome"
	"github.com/faultline/faultline/ingest/audit"
	"github.com/faultline/faultline/timeline/sqlite"
)

// TestCollectAgreesWithInvestigate: the plot's bad are the investigation's
// bad (the outcome classifier's, not a second definition), each in the
// bucket of its time; no bucket holds more bad than observations; and the
// first bad falls in a bucket with bad.
func TestCollectAgreesWithInvestigate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// Two minutes of reads answered 200, then a minute in which one in
	// three fails with a 500 (bad under the default expression).
	var lines []string
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	for i := range 180 {
		code := 200
		if i >= 120 && i%3 == 0 {
			code = 500
		}
		at := t0.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano)
		lines = append(lines, fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"id-%d","stage":"ResponseComplete",`+
			`"requestURI":"/api/v1/namespaces/ml/configmaps/trainer-env","verb":"get","user":{"username":"system:serviceaccount:ml:trainer"},"userAgent":"trainer/2.3",`+
			`"objectRef":{"resource":"configmaps","namespace":"ml","name":"trainer-env","apiVersion":"v1"},"responseStatus":{"code":%d},`+
			`"requestReceivedTimestamp":"%s","stageTimestamp":"%s"}`, i, code, at, at))
	}
	log := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(ctx, filepath.Join(dir, "t.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := audit.Ingest(ctx, s, []string{log}, audit.Options{}); err != nil {
		t.Fatal(err)
	}
	rep, err := investigate.Run(ctx, s, investigate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Boundary == nil {
		t.Fatal("no boundary: the test's incident is not one")
	}
	d, err := Collect(ctx, s, rep, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Buckets) != Buckets {
		t.Fatalf("%d buckets, want %d", len(d.Buckets), Buckets)
	}
	out, err := outcome.Read(ctx, s, outcome.Options{Since: rep.Window.Start, Until: rep.Window.End.Add(time.Nanosecond)})
	if err != nil {
		t.Fatal(err)
	}
	var bad, all int64
	for _, b := range d.Buckets {
		if b.Bad > b.All {
			t.Errorf("bucket %s: %d bad of %d observations", b.Start.Format(time.RFC3339Nano), b.Bad, b.All)
		}
		if !rep.Boundary.FirstBad.Before(b.Start) && rep.Boundary.FirstBad.Before(b.End) && b.Bad == 0 {
			t.Errorf("the first bad (%s) falls in a bucket with no bad", rep.Boundary.FirstBad.Format(time.RFC3339Nano))
		}
		bad += b.Bad
		all += b.All
	}
	if want := int64(len(out.Bad)); bad != want || want != 20 {
		t.Errorf("%d bad in the buckets, the classifier has %d (want 20)", bad, want)
	}
	if all != 180 {
		t.Errorf("%d observations in the buckets, want the 180 records", all)
	}
	if d.Load != nil {
		t.Errorf("a load panel without load evidence: %+v", d.Load)
	}
}
