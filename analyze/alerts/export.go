package alerts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	yaml3 "go.yaml.in/yaml/v3"
)

// RuleFile is a Prometheus rule file.
type RuleFile struct {
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is a group of rules evaluated together.
type RuleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is one alerting rule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// Prometheus turns definitions into a rule file of one group. Every
// definition passes Guard, or the export is refused with every reason.
func Prometheus(f *File, group string) (*RuleFile, error) {
	var refused []error
	g := RuleGroup{Name: group, Interval: FormatDuration(f.Interval.D()), Rules: []Rule{}}
	for i := range f.Alerts {
		d := &f.Alerts[i]
		if err := Guard(d); err != nil {
			refused = append(refused, err)
			continue
		}
		expr := "(" + d.Signal.PromQL + ") > " + num(d.Normal.Max)
		rng := "above " + num(d.Normal.Max)
		if d.Normal.Min != nil {
			expr += " or (" + d.Signal.PromQL + ") < " + num(*d.Normal.Min)
			rng = fmt.Sprintf("outside [%s, %s]", num(*d.Normal.Min), num(d.Normal.Max))
		}
		r := Rule{Alert: d.Name, Expr: expr, Labels: map[string]string{"severity": d.Severity, "owner": d.Owner.Team},
			Annotations: map[string]string{"summary": d.Summary, "mitigation": d.Mitigation,
				"description": fmt.Sprintf("%s %s for %s (value {{ $value }}); normal range learned by faultline alerts", d.Signal.Kind, rng, FormatDuration(d.For.D()))}}
		if d.For > 0 {
			r.For = FormatDuration(d.For.D())
		}
		if d.Owner.Rotation != "" {
			r.Labels["rotation"] = d.Owner.Rotation
		}
		if len(d.Slice) > 0 {
			r.Labels["slice"] = SliceString(d.Slice)
		}
		if d.Runbook != "" {
			r.Annotations["runbook_url"] = d.Runbook
		}
		if d.Cause != "" {
			r.Annotations["cause"] = d.Cause
		}
		g.Rules = append(g.Rules, r)
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("refused (unbounded series): %w", errors.Join(refused...))
	}
	return &RuleFile{Groups: []RuleGroup{g}}, nil
}

// YAML writes any JSON-tagged value as YAML, keeping the fields in the
// order the structs declare them (maps in key order).
func YAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var n yaml3.Node
	if err := yaml3.Unmarshal(j, &n); err != nil {
		return nil, err
	}
	plain(&n)
	var b bytes.Buffer
	enc := yaml3.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// plain drops the JSON quoting and flow style, so the encoder picks YAML's.
func plain(n *yaml3.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plain(c)
	}
}
