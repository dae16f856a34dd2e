package main

import (
	"context"
	"fmt"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/faultline/faultline/hack/cluster/internal/apiload"
)

// Family apf-misconfig: a batch agent has run for a while, its workers
// each listing one pool's per-node config every two or three seconds: steady,
// well within what the apiserver serves. The actor, meaning to keep batch
// traffic from starving interactive users, creates an API Priority and
// Fairness level with one share, that borrows no seats and rejects what
// it cannot seat, and a
// FlowSchema that sends every request of the agent's namespace to it. Load
// does not change; the agent's requests are now rejected (429) and its
// workers give up one after another. Just before, the same actor routed
// another namespace's agent to the existing workload-high level, which
// stays healthy.

func init() {
	register(&Family{Name: "apf-misconfig",
		Summary:        "a FlowSchema sends a steady agent's requests to a priority level of one share that rejects; 429s, its workers give up",
		APIServerFlags: "--max-requests-inflight=20 --max-mutating-requests-inflight=10",
		Run:            runAPFMisconfig})
}

// flowSchema routes every request of a namespace's ServiceAccounts to a
// priority level.
func flowSchema(name, ns, level string, precedence int32) *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         precedence,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
					ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: ns, Name: "*"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
					Namespaces: []string{"*"}, ClusterScope: true}},
			}},
		}}
}

func runAPFMisconfig(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	perm := c.rng.Perm(len(agentNamespaces))
	ns, other := agentNamespaces[perm[0]], agentNamespaces[perm[1]]
	name, version := Pick(c, fanoutAgents), c.version()
	nb, nbVersion := pickOther(c, neighbourNames, name), c.version()
	workers, every := c.Between(40, 64), c.Dur(1500*time.Millisecond, 2500*time.Millisecond)
	level, schema := Pick(c, []string{"batch-low", "best-effort", "bulk"}), Pick(c, []string{"batch-jobs", "batch-throttle", "bulk-clients"})
	actor := c.DrawActor()
	sa, err := c.steadyAgents(ctx, e, ns, other, name, version, nb, nbVersion, workers, every, 5*time.Second)
	if err != nil {
		return "", err
	}
	cr, created, stop, stopNb := sa.cr, sa.created, sa.stop, sa.stopNb
	defer stop()
	fc := c.As(actor).FlowcontrolV1()
	decoyAt := Now()
	decoy := other + "-jobs"
	if _, err := fc.FlowSchemas().Create(ctx, flowSchema(decoy, other, "workload-high", 600), metav1.CreateOptions{}); err != nil {
		stopNb()
		return "", fmt.Errorf("create flowschema %s: %w", decoy, err)
	}
	e.Decoys = []Change{{Ref: "FlowSchema/" + decoy, Dimension: "created", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(4*time.Second, 10*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	plcAt := Now()
	plc := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: level},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To(int32(1)),
				LendablePercent: ptr.To(int32(0)), BorrowingLimitPercent: ptr.To(int32(0)),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}}
	if _, err := fc.PriorityLevelConfigurations().Create(ctx, plc, metav1.CreateOptions{}); err != nil {
		stopNb()
		return "", fmt.Errorf("create prioritylevelconfiguration %s: %w", level, err)
	}
	at := Now()
	if _, err := fc.FlowSchemas().Create(ctx, flowSchema(schema, ns, level, 500), metav1.CreateOptions{}); err != nil {
		stopNb()
		return "", fmt.Errorf("create flowschema %s: %w", schema, err)
	}
	e.Changes = []Change{{Ref: "FlowSchema/" + schema, Dimension: "created", At: at, Actor: &actor},
		{Ref: "PriorityLevelConfiguration/" + level, Dimension: "created", At: plcAt, Actor: &actor}}
	if err := sa.givenUp(ctx, c); err != nil {
		return "", err
	}
	// The FlowSchema takes every request of the namespace, whose only
	// workload is the agent (end: the counterexample).
	failed, gave, err := sa.end(ctx, c, e, ns, name, version, lastGood)
	if err != nil {
		return "", err
	}
	e.Mitigation = []Action{{Action: "rollback", Target: "FlowSchema/" + schema}}
	// No burst: the control plane names it among the clients shed.
	e.extra("shed", map[string]string{"userAgent": cr.userAgent, "user": cr.user()})
	e.extra("created", created.Ref)
	e.extra("workers", workers)
	e.extra("failedWorkers", gave)
	e.extra("failedPods", failed)
	e.extra("throttled", cr.counter.Count(429))
	return fmt.Sprintf(`A batch agent that had run for weeks fails.

## What on-call saw
%s/%s, a Job of %d workers that each list a pool's node config every few seconds,
had been steady; now it has failed: %d of its pods exited 1 with messages like "%s",
and the Job controller deleted the others.
Nothing about it changed and its load is flat. %s/%s, which reads the same, is fine.
Platform teams were tuning the apiserver today.`, ns, name, workers, failed, apiload.GiveUpMessage(cr.firstError()), other, nb), nil
}
