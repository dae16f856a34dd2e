package clickhouse_test

import (
	"testing"

	"github.com/faultline/faultline/timeline/clickhouse/clickhousetest"
	"github.com/faultline/faultline/timeline/timelinetest"
)

func TestSeries(t *testing.T) { timelinetest.CheckSeries(t, clickhousetest.New(t)) }
