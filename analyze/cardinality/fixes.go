package cardinality

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// keptLabels are never offered for removal: job and instance name the
// scrape target (the targets list shows what each costs), le and quantile
// give a histogram or a summary its shape (fewer buckets is the fix there).
var keptLabels = map[string]bool{"job": true, "instance": true, "le": true, "quantile": true}

// maxRules is how many recording rules the aggregate fix writes: one for
// each metric the label multiplies most.
const maxRules = 5

// Fix kinds.
const (
	FixDrop      = "drop"
	FixAggregate = "aggregate"
)

const (
	dropTradeoff = "series that differ only by %[1]s become one: Prometheus keeps one sample per timestamp and " +
		"rejects the others as duplicates, so drop %[1]s only where nobody queries by it (a request, pod or " +
		"build id); where its values matter, aggregate instead or stop the exporter from emitting it"
	aggregateTradeoff = "the recorded series are free of %s and cheap to query, federate and remote-write " +
		"(keep only them downstream); the raw series still cost the scraping Prometheus until they are dropped " +
		"or the exporter stops emitting the label"
)

type metricSaving struct {
	name  string
	saves int
}

// worst picks the label whose removal saves most series over every
// metric (a tie goes to the one listed first in Report.Labels) and writes
// both fixes.
func worst(sn *snapshot, top int) *Worst {
	var best *labelStat
	view := func(ls *labelStat) Label {
		return Label{Name: ls.name, Values: len(ls.values), Series: ls.series, Saves: ls.saves}
	}
	for _, ls := range sn.labels {
		if keptLabels[ls.name] || ls.saves == 0 {
			continue
		}
		if best == nil || compareLabels(view(ls), view(best)) < 0 {
			best = ls
		}
	}
	if best == nil {
		return nil
	}
	var by []metricSaving
	for _, m := range sn.metrics {
		for _, l := range m.labels {
			if l.Name == best.name && l.Saves > 0 {
				by = append(by, metricSaving{m.name, l.Saves})
			}
		}
	}
	slices.SortFunc(by, func(a, b metricSaving) int {
		return cmp.Or(cmp.Compare(b.saves, a.saves), strings.Compare(a.name, b.name))
	})
	names := make([]string, len(by))
	for i, m := range by {
		names[i] = m.name
	}
	return &Worst{Label: best.name, Saves: best.saves,
		Fixes: []Fix{dropFix(best.name, first(names, top), best.saves), aggregateFix(best.name, first(by, maxRules))}}
}

// dropFix drops the label at scrape, from every series of the jobs it is
// pasted into.
func dropFix(label string, metrics []string, saves int) Fix {
	y := fmt.Sprintf(`# in each scrape_config whose series carry %[1]s
metric_relabel_configs:
  - action: labeldrop
    regex: %[2]s
`, label, strconv.Quote(regexp.QuoteMeta(label)))
	return Fix{Kind: FixDrop, Metrics: metrics, Saves: saves, YAML: y, Tradeoff: fmt.Sprintf(dropTradeoff, label)}
}

// aggregateFix writes a recording rule per metric that sums the label
// away (rates of counters, values of gauges).
func aggregateFix(label string, by []metricSaving) Fix {
	var b strings.Builder
	fmt.Fprintf(&b, "groups:\n  - name: %s\n    rules:\n", strconv.Quote("cardinality-without-"+label))
	fx := Fix{Kind: FixAggregate, Tradeoff: fmt.Sprintf(aggregateTradeoff, label)}
	for _, m := range by {
		record, expr := rule(m.name, label)
		fmt.Fprintf(&b, "      - record: %s\n        expr: %s\n", strconv.Quote(record), strconv.Quote(expr))
		fx.Metrics = append(fx.Metrics, m.name)
		fx.Saves += m.saves
	}
	fx.YAML = b.String()
	return fx
}

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	notNameChar  = regexp.MustCompile(`[^a-zA-Z0-9_]+`)
)

// counterSuffixes mark the series a rule must take the rate of: a sum of
// raw counters drops at every reset.
var counterSuffixes = []string{"_total", "_count", "_sum", "_bucket"}

// rule is the recording rule that sums label away from metric, named as
// Prometheus advises (level:metric:operations).
func rule(metric, label string) (record, expr string) {
	sel := metric
	if !metricNameRE.MatchString(metric) {
		sel = "{" + strconv.Quote(metric) + "}"
	}
	by := label
	if !labelNameRE.MatchString(label) {
		by = strconv.Quote(label)
	}
	level := "without_" + strings.Trim(notNameChar.ReplaceAllString(label, "_"), "_")
	base := strings.Trim(notNameChar.ReplaceAllString(metric, "_"), "_")
	for _, suf := range counterSuffixes {
		if strings.HasSuffix(metric, suf) {
			base = strings.TrimSuffix(base, "_total")
			return level + ":" + base + ":rate5m", fmt.Sprintf("sum without (%s) (rate(%s[5m]))", by, sel)
		}
	}
	return level + ":" + base + ":sum", fmt.Sprintf("sum without (%s) (%s)", by, sel)
}
