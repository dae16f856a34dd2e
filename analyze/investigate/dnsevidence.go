package investigate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/analyze/burst"
	"github.com/faultline/faultline/analyze/dns"
	"github.com/faultline/faultline/analyze/prom"
)

// DNSEvidence is a CoreDNS query storm (faultline dns) that began after
// the leading suspect and was under way when the incident began: how the
// change harmed when nothing the apiserver saw can say.
type DNSEvidence struct {
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	PeakRps     float64   `json:"peakRps"`
	BaselineRps float64   `json:"baselineRps"`
	// Client is whose queries they were: the value of CoreDNS's client
	// label (Attributed "label"), or, when the queries name no client,
	// the suspect's object, whose change came before the storm and whose
	// failures after it (Attributed "timing").
	Client     string `json:"client"`
	Attributed string `json:"attributed"`
	dns.Stats
	// Fixes are what would take the storm's queries off CoreDNS, the most
	// first, each with its trade-off.
	Fixes  []dns.Fix `json:"fixes"`
	Detail string    `json:"detail"`
}

// dnsWindow bounds how long before the first known-bad a storm may have
// ended and still be taken for under way: a resolver waits out timeout x
// attempts for each name of its search path before its caller fails.
const dnsWindow = time.Minute

// dnsSmear is how far before a change a storm's detected start may lie:
// a counter's rate spreads a jump over the scrape interval it falls in,
// and 30 s is the longest interval commonly scraped.
const dnsSmear = 30 * time.Second

// dnsStorms are the CoreDNS query storms of the evidence (faultline dns)
// and the command that shows them.
type dnsStorms struct {
	bursts []dns.Burst
	detail string
}

// readDNSStorms finds the CoreDNS storms of [first, last], the rule's
// baseline read before it. Only a store that holds series can show them;
// one without CoreDNS series shows none.
func readDNSStorms(ctx context.Context, s Store, first, last time.Time) (*dnsStorms, error) {
	ds, ok := s.(dns.Store)
	if !ok {
		return &dnsStorms{}, nil
	}
	since := first.Add(-time.Duration(burst.BaselineWindow) * time.Second)
	until := last.Add(time.Minute)
	r, err := dns.Run(ctx, ds, dns.Options{Since: since, Until: until})
	var none *prom.NoSeriesError
	if errors.As(err, &none) {
		return &dnsStorms{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("DNS evidence: %w", err)
	}
	return &dnsStorms{bursts: r.Bursts,
		detail: fmt.Sprintf("faultline dns --since %s --until %s", since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))}, nil
}

// after is the storm a change at `at` may have made: the first that began
// after it (dnsSmear before it at the earliest) and before the first
// known-bad, and was still under way at most dnsWindow before it. A
// workload's arrival (ref, its "Kind/namespace/name") makes only its own
// units' queries: a storm CoreDNS labelled with another client's name is
// not its, however well timed (ref "": a change that touches every client,
// such as an apiserver restart).
func (d *dnsStorms) after(at, firstBad time.Time, ref string) *dns.Burst {
	if d == nil || at.IsZero() {
		return nil
	}
	for i, b := range d.bursts {
		if b.Start.Before(at.Add(-dnsSmear)) || b.Start.After(firstBad) || b.End.Before(firstBad.Add(-dnsWindow)) {
			continue
		}
		if ref != "" && b.Client != "" && !queriesOf(b.Client, ref) {
			continue
		}
		return &d.bursts[i]
	}
	return nil
}

// queriesOf reports whether queries CoreDNS labelled client (a view's
// name) may be those of the workload ref, "Kind/namespace/name" or
// "Kind/name": the label names its namespace, its name, or both.
func queriesOf(client, ref string) bool {
	parts := strings.Split(ref, "/")
	if len(parts) < 2 {
		return false
	}
	name := parts[len(parts)-1]
	if client == name {
		return true
	}
	if len(parts) < 3 {
		return false
	}
	ns := parts[len(parts)-2]
	return client == ns || client == ns+"/"+name
}

// dnsEvidence attaches to the leading suspect the CoreDNS storm it may
// have made (dnsStorms.after), when it is a cause of load (a workload's
// arrival, an apiserver restart): beside a change of content a storm is
// a coincidence, not an explanation.
func dnsEvidence(rep *Report) {
	if len(rep.Changes) == 0 || rep.Boundary == nil || rep.Boundary.FirstBad.IsZero() {
		return
	}
	top := &rep.Changes[0]
	if top.Dimension != "created" && top.Dimension != "restart" {
		return
	}
	ref := top.Ref
	if top.Dimension == "restart" {
		ref = "" // every client resolves again
	}
	b := rep.storms.after(top.At, rep.Boundary.FirstBad, ref)
	if b == nil {
		return
	}
	ev := &DNSEvidence{Start: b.Start, End: b.End, PeakRps: b.PeakRps, BaselineRps: b.BaselineRps,
		Client: top.Ref, Attributed: "timing", Stats: b.Stats, Fixes: b.Fixes, Detail: rep.storms.detail}
	if b.Client != "" {
		ev.Client, ev.Attributed = b.Client, "label"
	}
	top.DNS = ev
}

// dnsArrival is the mitigation of a workload's arrival whose harm was a
// DNS storm: fewer queries per lookup, and its units' start spread.
func dnsArrival(top Suspect) []Action {
	d := top.DNS
	why := fmt.Sprintf("its units' lookups made a DNS storm (%.0f queries/s at peak vs %.2g/s before)", d.PeakRps, d.BaselineRps)
	for _, f := range d.Fixes {
		if f.RemovesShare != nil && *f.RemovesShare > 0 {
			why += fmt.Sprintf("; %s would take %s%.0f%% of them off CoreDNS (%s)", f.Kind, f.UpTo(), *f.RemovesShare*100, f.Evidence)
		}
	}
	a := Action{Action: "set", Target: top.Ref + " dnsConfig",
		To:  "options ndots:1 (or fully qualified names, with a trailing dot); a node-local DNS cache",
		Why: why + "; see " + d.Detail, Verify: d.Detail}
	start := spreadStart(top, "its units all resolved at once: spread their start over a window")
	start.Verify = d.Detail
	return []Action{a, start}
}

// explainDNS adds to a confident cause's verdict the storm its change made.
func explainDNS(rep *Report) {
	if rep.Verdict != VerdictCause || len(rep.Changes) == 0 || rep.Changes[0].DNS == nil {
		return
	}
	d := rep.Changes[0].DNS
	rep.VerdictWhy += fmt.Sprintf("; CoreDNS's queries jumped to %.0f/s at peak from %.2g/s before at %s, until %s (NXDOMAIN %s, p99 %s): see %s",
		d.PeakRps, d.BaselineRps, d.Start.UTC().Format("15:04:05"), d.End.UTC().Format("15:04:05"), pct(d.NxdomainShare), ms(d.P99Ms), d.Detail)
}

func pct(p *float64) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.0f%%", *p*100)
}

func ms(p *float64) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.0f ms", *p)
}
