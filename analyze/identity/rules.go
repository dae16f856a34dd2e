package identity

import (
	"fmt"
	"sort"

	"github.com/google/cel-go/cel"
	"sigs.k8s.io/yaml"
)

// Rule extracts one declared artifact dimension (dataset, model, checkpoint,
// code or config version) from a pod: a CEL expression over `pod`, the pod
// object as JSON. A rule that fails on a pod (a missing key) or yields ""
// gives no dimension.
type Rule struct {
	Dimension string
	Expr      string
	prog      cel.Program
}

var ruleEnv = func() *cel.Env {
	env, err := cel.NewEnv(cel.Variable("pod", cel.DynType))
	if err != nil {
		panic(fmt.Sprintf("identity: CEL environment: %v", err)) // static declarations
	}
	return env
}()

// envVar is the CEL for the first value of an env var named name in any
// container of the pod.
func envVar(name string) string {
	return `pod.spec.containers.filter(c, has(c.env) && c.env.exists(e, e.name == "` + name + `" && has(e.value)))` +
		`.map(c, c.env.filter(e, e.name == "` + name + `")[0].value)[0]`
}

// defaultRules read the annotations faultline documents, then the
// environment variables ML platforms commonly set.
var defaultRules = []struct{ dim, expr string }{
	{"artifact.dataset", `pod.metadata.annotations["faultline.dev/dataset"]`},
	{"artifact.model", `pod.metadata.annotations["faultline.dev/model"]`},
	{"artifact.checkpoint", `pod.metadata.annotations["faultline.dev/checkpoint"]`},
	{"artifact.code", `pod.metadata.annotations["faultline.dev/code-version"]`},
	{"artifact.config", `pod.metadata.annotations["faultline.dev/config-version"]`},
	{"artifact.dataset.env", envVar("DATASET_VERSION")},
	{"artifact.model.env", envVar("MODEL_VERSION")},
	{"artifact.checkpoint.env", envVar("CHECKPOINT")},
	{"artifact.code.env", envVar("GIT_SHA")},
}

// DefaultRules returns the built-in extraction rules.
func DefaultRules() []Rule {
	out := make([]Rule, 0, len(defaultRules))
	for _, d := range defaultRules {
		r, err := compileRule(d.dim, d.expr)
		if err != nil {
			panic(err) // built in: a bug, not input
		}
		out = append(out, r)
	}
	return out
}

func compileRule(dim, expr string) (Rule, error) {
	ast, iss := ruleEnv.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return Rule{}, fmt.Errorf("rule %s: %w", dim, iss.Err())
	}
	prog, err := ruleEnv.Program(ast)
	if err != nil {
		return Rule{}, fmt.Errorf("rule %s: %w", dim, err)
	}
	return Rule{Dimension: dim, Expr: expr, prog: prog}, nil
}

// ParseRules reads a YAML map of `dimension: CEL expression`, added to (and
// overriding by name) the default rules. Dimensions are prefixed
// "artifact." unless they already are.
func ParseRules(data []byte) ([]Rule, error) {
	var m map[string]string
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return nil, fmt.Errorf("identity rules: want a map of dimension: CEL expression: %w", err)
	}
	byDim := map[string]Rule{}
	for _, r := range DefaultRules() {
		byDim[r.Dimension] = r
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		dim := k
		if len(dim) < 9 || dim[:9] != "artifact." {
			dim = "artifact." + dim
		}
		r, err := compileRule(dim, m[k])
		if err != nil {
			return nil, err
		}
		byDim[dim] = r
	}
	out := make([]Rule, 0, len(byDim))
	for _, r := range byDim {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dimension < out[j].Dimension })
	return out, nil
}

// eval applies the rule to a pod.
func (r Rule) eval(pod map[string]any) (string, bool) {
	out, _, err := r.prog.Eval(map[string]any{"pod": pod})
	if err != nil {
		return "", false
	}
	switch v := out.Value().(type) {
	case string:
		return v, v != ""
	case int64, uint64, float64, bool:
		return fmt.Sprint(v), true
	}
	return "", false
}
