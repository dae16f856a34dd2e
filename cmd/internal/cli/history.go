package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/analyze/actor"
	"github.com/faultline/faultline/analyze/identity"
	"github.com/faultline/faultline/analyze/objdiff"
	"github.com/faultline/faultline/ingest/input"
	"github.com/faultline/faultline/ingest/versions"
	"github.com/faultline/faultline/internal/termsafe"
	"github.com/faultline/faultline/timeline"
)

type historyOptions struct {
	f         *Factory
	namespace string
	output    string
	noise     bool
}

// historyStep is one version of an object and what changed to reach it.
type historyStep struct {
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Time            time.Time         `json:"time"`
	Hash            string            `json:"hash"`
	Evidence        timeline.Evidence `json:"evidence"`
	// Seen is how the version's time was learned: "written" (the audited
	// write that made it), "read" (a read returned it) or "dump" (its own
	// metadata: a lower bound).
	Seen string `json:"seen"`
	// By and UserAgent name who made the version, from its audit record;
	// empty for a version seen only in a dump.
	By        string           `json:"by,omitempty"`
	UserAgent string           `json:"userAgent,omitempty"`
	Changes   []objdiff.Change `json:"changes"`
}

// seenName names a sighting in history's output.
func seenName(s timeline.Sighting) string {
	switch s {
	case timeline.SeenWritten:
		return "written"
	case timeline.SeenRead:
		return "read"
	}
	return "dump"
}

func newHistoryCmd(f *Factory) *cobra.Command {
	opts := &historyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "history REF",
		Short: "Show every version of an object and what changed at each step",
		Long: `Show every version of an object the timeline holds, oldest first, and what
changed from one to the next. Versions from the audit log and from dumps are
merged in the order they were made: by time, then by resourceVersion; a
dump's snapshot, whose time is only a lower bound, comes after the audited
versions older than it. Each version names who made it (the user or service
account and user agent of the audit record that wrote it), or "actor unknown
(no audit record)" when it was seen only in a dump. Each step lists what
changed: paths with their old and new values (JSON),
the noise removed (resourceVersion, managedFields, generation, heartbeat
times, a node's image list; --noise keeps it). Secret and ConfigMap values
appear as the hashes the timeline stores, so a step still says which key
changed.

REF is KIND/NAMESPACE/NAME, or node/NAME.`,
		Example: `  faultline history configmap/vision-train/trainer-env
  faultline history node/gpu-0042 -o json
  faultline history deployment/web/api`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("faultline history configmap/NAMESPACE/NAME", "history takes one REF, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return historyRun(cmd.Context(), opts, args[0])
		},
		ValidArgsFunction: completeRef(f, 1),
	}
	cmd.Flags().StringVarP(&opts.namespace, "namespace", "n", "", "namespace for REFs written KIND/NAME")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "table", "output format: table, json or yaml")
	cmd.Flags().BoolVar(&opts.noise, "noise", false, "keep noise (resourceVersion, managedFields, heartbeats)")
	return cmd
}

func historyRun(ctx context.Context, o *historyOptions, refArg string) error {
	if err := checkOutput(o.output, "table", "json", "yaml"); err != nil {
		return err
	}
	kind, ns, name, err := parseHistoryRef(refArg, o.namespace)
	if err != nil {
		return err
	}
	resource := resourceOf(kind)
	store, err := o.f.OpenStoreReadOnly(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	vs, err := store.Versions(ctx, timeline.VersionQuery{Resource: resource, Namespace: ns, Name: name, History: true})
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		return fmt.Errorf("no version of %s %s in the timeline; try faultline sources", resource, strings.TrimPrefix(ns+"/"+name, "/"))
	}
	steps := make([]historyStep, 0, len(vs))
	var prev []byte
	for _, v := range vs {
		st := historyStep{ResourceVersion: v.ResourceVersion, Time: v.Time, Hash: v.Hash, Evidence: v.Evidence,
			Seen: seenName(v.Seen), Changes: []objdiff.Change{}}
		a, err := actor.OfVersion(ctx, store, &v)
		if err != nil {
			return err
		}
		st.By, st.UserAgent = a.By, a.UserAgent
		if prev != nil {
			ch, err := objdiff.DiffJSON(prev, v.Content, objdiff.Options{KeepNoise: o.noise})
			if err != nil {
				return err
			}
			if ch != nil {
				st.Changes = ch
			}
		}
		prev = v.Content
		steps = append(steps, st)
	}
	if structured(o.output) {
		return o.f.writeData(o.output, steps)
	}
	w := o.f.IO.Out
	for i, st := range steps {
		termsafe.Fprintf(w, "%s  resourceVersion %s  (run %d line %d, %s)\n", st.Time.UTC().Format(time.RFC3339), dash(st.ResourceVersion),
			st.Evidence.Run, st.Evidence.Line, st.Seen)
		termsafe.Fprintf(w, "  %s\n", actor.Actor{By: st.By, UserAgent: st.UserAgent})
		switch {
		case i == 0:
			fmt.Fprintln(w, "  first version seen")
		case len(st.Changes) == 0:
			fmt.Fprintln(w, "  no change but noise")
		}
		for _, c := range st.Changes {
			termsafe.Fprintf(w, "  %s: %s -> %s\n", c.Path, dash(c.From), dash(c.To))
		}
	}
	return nil
}

// parseHistoryRef reads history's REF: KIND/NAMESPACE/NAME, or KIND/NAME in
// the namespace of -n (all namespaces without it, as for a node). Every
// part written must be non-empty: the store reads an empty namespace or
// name as "any", so "pod//" would diff every pod's versions as one object.
func parseHistoryRef(ref, namespace string) (kind, ns, name string, err error) {
	parts := strings.Split(ref, "/")
	switch len(parts) {
	case 3:
		kind, ns, name = parts[0], parts[1], parts[2]
	case 2:
		kind, ns, name = parts[0], namespace, parts[1]
	default:
		return "", "", "", usagef("faultline history configmap/NAMESPACE/NAME", "invalid REF %q: want KIND/NAMESPACE/NAME", ref)
	}
	names := []string{"KIND", "NAMESPACE", "NAME"}
	if len(parts) == 2 {
		names = []string{"KIND", "NAME"}
	}
	for i, p := range parts {
		if p == "" {
			return "", "", "", usagef("faultline history configmap/NAMESPACE/NAME", "invalid REF %q: empty %s", ref, names[i])
		}
	}
	return kind, ns, name, nil
}

// resourceOf maps what users type (configmap, cm, node, deploy...) to a
// resource: identity's kinds, a few short names, else the lower-case plural.
func resourceOf(kind string) string {
	short := map[string]string{"cm": "configmaps", "configmap": "configmaps", "secret": "secrets", "svc": "services",
		"ds": "daemonsets", "daemonset": "daemonsets", "cronjob": "cronjobs", "cj": "cronjobs", "lease": "leases"}
	k := strings.ToLower(kind)
	if r, ok := short[k]; ok {
		return r
	}
	if _, r, ok := identity.Resource(k); ok {
		return r
	}
	switch {
	case strings.HasSuffix(k, "ss"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es" // storageclass, ingress
	case strings.HasSuffix(k, "y") && len(k) > 1 && !strings.ContainsRune("aeiou", rune(k[len(k)-2])):
		return k[:len(k)-1] + "ies" // networkpolicy
	case strings.HasSuffix(k, "s"):
		return k // already plural
	}
	return k + "s"
}

func newIngestVersionsCmd(f *Factory) *cobra.Command {
	var strict bool
	cmd := &cobra.Command{
		Use:   "versions PATH...",
		Short: "Ingest artifact versions, job runs and rollouts from your ML platform",
		Long: `Ingest what ML platforms know and Kubernetes does not, as JSON Lines (or YAML:
a list or a stream of documents, by the .yaml/.yml name), one entry a line,
defined by docs/versions.schema.json:

  {"type":"artifact","time":T,"kind":"dataset|model|checkpoint|config|image|code",
   "name":N,"version":V,"digest":D,"uri":U,"producer":P,"parents":["KIND/NAME@VERSION"]}
  {"type":"run","job":"NAMESPACE/NAME","run":R,"started":T,"ended":T,
   "outcome":"running|succeeded|failed|unknown","consumed":["KIND/NAME@VERSION"],
   "produced":[...],"pods":["NAMESPACE/NAME","uid:UID"]}
  {"type":"rollout","time":T,"target":"KIND/NAMESPACE/NAME","from":F,"to":T}

A run's consumed artifacts join the identity of its pods (artifact.consumed/
KIND/NAME = VERSION). A bad entry is reported as FILE:LINE: field: problem and
skipped; --strict stops at the first.`,
		Example: `  faultline ingest versions mlflow-export.jsonl
  faultline ingest versions runs.yaml --strict`,
		Args: argsAtLeast(1, "faultline ingest versions runs.jsonl"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ingestFilesRun(cmd.Context(), f, func(ctx context.Context, store timeline.Appender) ([]timeline.IngestRun, error) {
				return versions.Ingest(ctx, store, args, versions.Options{Strict: strict,
					OnSkip: func(b *input.Skip) { f.warnf("%s", b) }})
			})
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "stop at the first bad entry (exit 1)")
	return cmd
}
