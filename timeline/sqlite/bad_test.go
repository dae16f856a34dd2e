package sqlite

import (
	"testing"

	"github.com/faultline/faultline/timeline/timelinetest"
)

// TestBadKeySet: timelinetest.CheckBadKeySet.
func TestBadKeySet(t *testing.T) {
	s := openWhereStore(t)
	timelinetest.CheckBadKeySet(t, s, timelinetest.ReadAll(t, s))
}

// TestFields: timelinetest.CheckFields.
func TestFields(t *testing.T) {
	s := openWhereStore(t)
	timelinetest.CheckFields(t, s, timelinetest.ReadAll(t, s))
}

// TestGaps: timelinetest.CheckGaps.
func TestGaps(t *testing.T) {
	timelinetest.CheckGaps(t, openTest(t))
}

// TestPodField: timelinetest.CheckPodField.
func TestPodField(t *testing.T) {
	timelinetest.CheckPodField(t, openTest(t))
}
