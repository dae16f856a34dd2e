package clickhouse_test

import (
	"testing"

	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestGaps: the gaps the servers find from buckets of time are the gaps
// between consecutive records (timelinetest.CheckGaps).
func TestGaps(t *testing.T) {
	timelinetest.CheckGaps(t, clickhousetest.New(t))
}
