package investigate

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/faultline/faultline/timeline"
)

// A template that changed only to restart its pods. `kubectl rollout
// restart` (and every tool that restarts a Deployment) writes the time
// into an annotation of the pod template: a new template hash, a new
// ReplicaSet, new pods, and nothing they run with changed. When the bad
// units are such a restart's pods, the restart started them but did not
// break them: what broke them is content that reached them (a key, a
// Secret) or lies outside what they ran with (a registry, a network, a
// node, what admitted them). The template hash is no cause, even when
// nothing else explains them: it is then "no confident cause".

// restartAnnotations are the pod-template annotations restarts write.
var restartAnnotations = []string{"kubectl.kubernetes.io/restartedAt"}

// markRestarts marks the template-hash suspects whose two templates
// differ only by a restart's annotation.
func markRestarts(ctx context.Context, s Store, cands []*Suspect, ns string) error {
	for _, c := range cands {
		if !strings.HasSuffix(c.Dimension, "podTemplateHash") || c.From == "" || c.To == "" {
			continue
		}
		kind, cns, name := splitRef(c.Ref)
		if kind != "Deployment" {
			continue
		}
		if cns == "" {
			cns = ns
		}
		from, err := templateOf(ctx, s, cns, name+"-"+c.From)
		if err != nil {
			return err
		}
		to, err := templateOf(ctx, s, cns, name+"-"+c.To)
		if err != nil {
			return err
		}
		c.restartOnly = from != nil && to != nil && reflect.DeepEqual(from, to)
	}
	return nil
}

// templateOf is a ReplicaSet's pod template as its latest version holds
// it, without its hash label and the restart annotations; nil when the
// timeline holds none.
func templateOf(ctx context.Context, s Store, ns, name string) (map[string]any, error) {
	vs, err := s.Versions(ctx, timeline.VersionQuery{Group: "apps", Resource: "replicasets", Namespace: ns, Name: name})
	if err != nil || len(vs) == 0 {
		return nil, err
	}
	var rs struct {
		Spec struct {
			Template map[string]any `json:"template"`
		} `json:"spec"`
	}
	if json.Unmarshal(vs[len(vs)-1].Content, &rs) != nil || rs.Spec.Template == nil {
		return nil, nil
	}
	if meta, ok := rs.Spec.Template["metadata"].(map[string]any); ok {
		if labels, ok := meta["labels"].(map[string]any); ok {
			delete(labels, "pod-template-hash")
		}
		if ann, ok := meta["annotations"].(map[string]any); ok {
			for _, a := range restartAnnotations {
				delete(ann, a)
			}
			if len(ann) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	return rs.Spec.Template, nil
}
