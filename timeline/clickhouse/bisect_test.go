package clickhouse_test

import (
	"testing"

	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestBisectLifecycle: the bisect log on the cluster keeps sessions and
// marks as SQLite's does (timelinetest.CheckBisectLifecycle).
func TestBisectLifecycle(t *testing.T) {
	timelinetest.CheckBisectLifecycle(t, clickhousetest.New(t))
}

// TestStartBisectWithMarks: timelinetest.CheckStartBisectWithMarks.
func TestStartBisectWithMarks(t *testing.T) {
	timelinetest.CheckStartBisectWithMarks(t, clickhousetest.New(t))
}
