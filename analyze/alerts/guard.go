package alerts

import (
	"fmt"
	"regexp"
	"strings"
)

// unbounded are the labels and slice keys whose values grow with the
// fleet or with time: a series (and an alert) per pod, per request, per
// user where users are per-pod service accounts.
var unbounded = map[string]string{
	"pod":             "one series per pod, and pods come and go",
	"pod_name":        "one series per pod, and pods come and go",
	"pod_uid":         "one series per pod uid: new with every pod",
	"uid":             "one series per object uid: new with every object",
	"name":            "object names: one series per pod",
	"instance":        "one series per scrape target, a pod where pods are scraped",
	"pod_ip":          "one series per pod IP",
	"ip":              "one series per client IP",
	"sourceip":        "one series per client IP",
	"source_ip":       "one series per client IP",
	"container_id":    "one series per container run",
	"image_id":        "one series per image digest ever pulled",
	"request_id":      "one series per request",
	"auditid":         "one series per request",
	"audit_id":        "one series per request",
	"user":            "per-user series are unbounded where users are per-pod service accounts (and apiserver metrics carry no user label): slice by request class",
	"username":        "per-user series are unbounded where users are per-pod service accounts",
	"service_account": "per-user series are unbounded where users are per-pod service accounts",
	"useragent":       "user agents carry versions and pod names: slice by request class",
	"user_agent":      "user agents carry versions and pod names: slice by request class",
	"rank":            "one series per rank of every gang job",
	"run":             "one series per run",
}

var (
	groupingRe  = regexp.MustCompile(`\b(by|without|group_left|group_right)\s*\(([^)]*)\)`)
	aggregateRe = regexp.MustCompile(`^\(*\s*(sum|count|max|min|avg|group|stddev|stdvar|quantile|histogram_quantile|count_values|scalar|vector|absent|absent_over_time)\b`)
	perPodRe    = regexp.MustCompile(`\bkube_pod_\w+`)
	singleRe    = regexp.MustCompile(`\b(count|sum|max|min|avg|group)\s*\(`)
)

// singleSeriesCut blanks the arguments of the outermost aggregations that
// have no grouping of their own (count(...), sum(...)): whatever labels
// they join or group by inside, they return one series.
func singleSeriesCut(q string) string {
	var b strings.Builder
	depth, i := 0, 0
	for i < len(q) {
		if depth == 0 {
			if loc := singleRe.FindStringIndex(q[i:]); loc != nil && loc[0] == 0 {
				// Skip to the matching parenthesis.
				j, d := i+loc[1], 1
				for ; j < len(q) && d > 0; j++ {
					switch q[j] {
					case '(':
						d++
					case ')':
						d--
					}
				}
				b.WriteString(q[i:i+loc[1]] + ")")
				i = j
				continue
			}
		}
		switch q[i] {
		case '(':
			depth++
		case ')':
			depth--
		}
		b.WriteByte(q[i])
		i++
	}
	return b.String()
}

// Guard refuses a definition whose slice or PromQL would create unbounded
// series or alerts. The error says why.
func Guard(d *Definition) error {
	for k := range d.Slice {
		if why, ok := unbounded[strings.ToLower(k)]; ok {
			return fmt.Errorf("%s: slice %s: %s", d.Name, k, why)
		}
	}
	q := d.Signal.PromQL
	for _, m := range groupingRe.FindAllStringSubmatch(singleSeriesCut(q), -1) {
		if m[1] == "without" {
			return fmt.Errorf("%s: promql: %s (%s) keeps every other label, pod and instance included: aggregate by (...) bounded labels", d.Name, m[1], m[2])
		}
		for _, l := range strings.Split(m[2], ",") {
			l = strings.TrimSpace(l)
			if why, ok := unbounded[strings.ToLower(l)]; ok {
				return fmt.Errorf("%s: promql: %s (%s): %s", d.Name, m[1], l, why)
			}
		}
	}
	if perPodRe.MatchString(q) && !aggregateRe.MatchString(strings.TrimSpace(q)) {
		return fmt.Errorf("%s: promql: per-pod series (%s) not aggregated: it would fire one alert per pod; wrap it in count(...) or sum(...)",
			d.Name, perPodRe.FindString(q))
	}
	return nil
}
