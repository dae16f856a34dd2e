package cardinality

import "time"

// Report is the cardinality of the series at one instant (or of every
// series held), with the churn against a second instant when one was
// given. Every list is ordered with a full tie-break, so the same series
// give the same report. -o json prints it (docs/metrics.md,
// "Cardinality").
type Report struct {
	// Source is "timeline" (ingested series) or "tsdb-status" (a saved
	// /api/v1/status/tsdb answer).
	Source string    `json:"source"`
	At     time.Time `json:"at,omitzero"` // zero: every series held
	Vs     time.Time `json:"vs,omitzero"`
	// LookbackSeconds is how far back from At a sample keeps its series
	// present.
	LookbackSeconds float64 `json:"lookbackSeconds,omitempty"`
	Metric          string  `json:"metric,omitempty"` // the one metric measured, if one was asked for

	Series      int `json:"series"`      // series present at At
	MetricCount int `json:"metricCount"` // metric names among them
	LabelCount  int `json:"labelCount"`  // label names among them
	// Metrics are the metrics with the most series, first.
	Metrics []Metric `json:"metrics"`
	// Labels are the label names that multiply series most (Saves), then
	// those with the most values; from a tsdb status, by values.
	Labels []Label `json:"labels"`
	// Pairs are the label=value pairs carried by the most series.
	Pairs []Pair `json:"labelValuePairs"`
	// Targets are the scrape targets (job, instance) that grew most
	// between Vs and At; with no Vs, those with the most series.
	Targets []Target `json:"targets"`
	Churn   *Churn   `json:"churn,omitempty"`
	// Worst is the label whose removal saves most series, with its
	// fixes.
	Worst *Worst   `json:"worst,omitempty"`
	Notes []string `json:"notes,omitempty"`
}

// Metric is one metric's series and what multiplies them.
type Metric struct {
	Name   string `json:"name"`
	Series int    `json:"series"`
	// Labels are the metric's label names, the one whose removal saves
	// most first (none from a tsdb status).
	Labels []MetricLabel `json:"labels,omitempty"`
}

// MetricLabel is what one label does to one metric's series.
type MetricLabel struct {
	Name   string `json:"name"`
	Values int    `json:"values"` // distinct values among the metric's series
	// Multiplier is the metric's series over its series without the
	// label (those left once series that differ only by it are merged).
	Multiplier float64 `json:"multiplier"`
	// Saves is how many series the metric would lose without the label.
	Saves int `json:"saves"`
}

// Label is one label name over every metric.
type Label struct {
	Name    string `json:"name"`
	Values  int    `json:"values"`            // distinct values
	Series  int    `json:"series,omitempty"`  // series carrying it
	Metrics int    `json:"metrics,omitempty"` // metrics carrying it
	// Saves is how many series every metric together would lose
	// without it.
	Saves int `json:"saves,omitempty"`
	// MemoryBytes is what its names and values hold in the head (tsdb
	// status only).
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
}

// Pair is a label=value pair and the series carrying it.
type Pair struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Series int    `json:"series"`
}

// Target is one scrape target's series.
type Target struct {
	Job      string `json:"job"`
	Instance string `json:"instance"`
	Series   int    `json:"series"`             // at At
	SeriesVs int    `json:"seriesVs,omitempty"` // at Vs
	Growth   int    `json:"growth,omitempty"`   // Series - SeriesVs
}

// Churn is what changed between Vs and At: series that appeared (present
// at At, not at Vs) and disappeared (present at Vs, not at At).
type Churn struct {
	SeriesVs    int           `json:"seriesVs"`
	Appeared    int           `json:"appeared"`
	Disappeared int           `json:"disappeared"`
	Kept        int           `json:"kept"`
	Metrics     []MetricChurn `json:"metrics"` // the most churned first
	Labels      []LabelChurn  `json:"labels"`  // the most values churned first
}

// MetricChurn is one metric's churn.
type MetricChurn struct {
	Name        string `json:"name"`
	Series      int    `json:"series"`
	SeriesVs    int    `json:"seriesVs"`
	Appeared    int    `json:"appeared"`
	Disappeared int    `json:"disappeared"`
}

// LabelChurn is one label's values that came and went: values present
// at At and not at Vs (new), and the reverse (gone), with the series that
// carried them.
type LabelChurn struct {
	Name        string   `json:"name"`
	NewValues   int      `json:"newValues"`
	GoneValues  int      `json:"goneValues"`
	Appeared    int      `json:"appeared"`    // series at At carrying a new value
	Disappeared int      `json:"disappeared"` // series at Vs carrying a gone value
	Examples    []string `json:"examples,omitempty"`
}

// Worst is the label whose removal saves most series, and how to remove
// it.
type Worst struct {
	Label string `json:"label"`
	Saves int    `json:"saves"` // 0 when unknown (a tsdb status)
	Fixes []Fix  `json:"fixes"`
}

// Fix is one way to be rid of a label: its kind ("drop" at scrape, or
// "aggregate" with recording rules), the series it saves, a YAML snippet
// to paste, and what it costs.
type Fix struct {
	Kind     string   `json:"kind"`
	Metrics  []string `json:"metrics,omitempty"`
	Saves    int      `json:"saves"`
	YAML     string   `json:"yaml"`
	Tradeoff string   `json:"tradeoff"`
}
