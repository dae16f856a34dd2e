package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/faultline/faultline/hack/cluster/internal/apiload"
)

// Family storageclass-deleted: a cleanup deletes StorageClasses it
// believes unused: first one nothing uses (an old HDD class), then one a
// StatefulSet's volumeClaimTemplates still name. A bound volume does not
// need its class: the running replicas carry on. When automation next
// scales the StatefulSet up, the claims of its new replicas cannot be
// provisioned (the controller-manager's ProvisioningFailed: the class is
// not found) and stay Pending, and so do the new pods (FailedScheduling:
// unbound immediate PersistentVolumeClaims). Another StatefulSet, of
// another class, scaled up at the same moment, is fine. The cluster's CSI
// provisioner is played by the recorder (as kwok plays the kubelets): it
// provisions a volume for every pending claim whose class exists and
// names it.

func init() {
	register(&Family{Name: "storageclass-deleted",
		Summary: "a StorageClass a StatefulSet's claims name is deleted by a cleanup; its next replicas' volumes cannot be provisioned and they stay Pending",
		Run:     runStorageClassDeleted})
}

// csiDriver is the provisioner the recorder plays.
const csiDriver = "csi.example.com"

// storageClass creates a StorageClass of the recorder's CSI driver as the
// actor.
func (c *Cluster) storageClass(ctx context.Context, a Actor, name, tier string) error {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: csiDriver,
		Parameters:        map[string]string{"tier": tier},
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
	if _, err := c.As(a).StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create storageclass %s: %w", name, err)
	}
	return nil
}

// provisioner plays the CSI driver's external provisioner, as the
// ServiceAccount kube-system/csi-provisioner: every half second, each
// pending claim whose StorageClass exists and is the driver's gets a
// volume bound to it (the PersistentVolume controller completes the
// binding). A claim whose class is gone gets nothing, as a real
// provisioner cannot read the parameters of a class that is not there.
type provisioner struct {
	cs     *kubernetes.Clientset
	cancel context.CancelFunc
	done   chan struct{}
}

func (c *Cluster) startProvisioner(ctx context.Context) (*provisioner, error) {
	token, err := apiload.ServiceAccount(ctx, c.Admin, "kube-system", "csi-provisioner")
	if err != nil {
		return nil, err
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "csi-provisioner"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "csi-provisioner", Namespace: "kube-system"}}}
	if _, err := c.Admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("bind csi-provisioner: %w", err)
	}
	cfg := rest.AnonymousClientConfig(c.cfg)
	cfg.BearerToken, cfg.UserAgent = token, "csi-provisioner/v5.2.0 (linux/amd64) kubernetes/v5.2.0"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &provisioner{cs: cs, cancel: cancel, done: make(chan struct{})}
	go p.loop(ctx)
	return p, nil
}

func (p *provisioner) loop(ctx context.Context) {
	defer close(p.done)
	made := map[string]bool{} // claims given a volume
	for ctx.Err() == nil {
		claims, err := p.cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, pvc := range claims.Items {
				if made[string(pvc.UID)] || pvc.Status.Phase != corev1.ClaimPending || pvc.Spec.StorageClassName == nil {
					continue
				}
				sc, err := p.cs.StorageV1().StorageClasses().Get(ctx, *pvc.Spec.StorageClassName, metav1.GetOptions{})
				if err != nil || sc.Provisioner != csiDriver {
					continue
				}
				pv := &corev1.PersistentVolume{
					ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + string(pvc.UID),
						Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": csiDriver}},
					Spec: corev1.PersistentVolumeSpec{
						Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
						AccessModes:                   pvc.Spec.AccessModes,
						StorageClassName:              sc.Name,
						PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
						ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
						PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
							Driver: csiDriver, VolumeHandle: "vol-" + string(pvc.UID)}},
					}}
				if _, err := p.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err == nil || apierrors.IsAlreadyExists(err) {
					made[string(pvc.UID)] = true
				}
			}
		}
		Sleep(ctx, 500*time.Millisecond)
	}
}

func (p *provisioner) Stop() {
	p.cancel()
	<-p.done
}

// statefulSet creates a StatefulSet whose replicas each claim a volume
// of the class, started in parallel, as the actor, and waits until its
// pods run.
func (c *Cluster) statefulSet(ctx context.Context, a Actor, ns, name string, replicas int, class string, t Template) error {
	if err := c.Namespace(ctx, ns); err != nil {
		return err
	}
	labels := labelsWith(t.Labels, "app", name)
	spec := t.spec(corev1.RestartPolicyAlways)
	spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/var/lib/" + name})
	ss := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(replicas)), ServiceName: name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template:            corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr.To(class),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("100Gi")}}},
			}},
		},
	}
	if _, err := c.As(a).AppsV1().StatefulSets(ns).Create(ctx, ss, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create statefulset %s/%s: %w", ns, name, err)
	}
	return c.WaitRunning(ctx, ns, "app="+name, replicas, 3*time.Minute)
}

// scaleStatefulSet sets a StatefulSet's replicas as the actor.
func (c *Cluster) scaleStatefulSet(ctx context.Context, a Actor, ns, name string, replicas int) error {
	s, err := c.As(a).AppsV1().StatefulSets(ns).GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("scale of %s/%s: %w", ns, name, err)
	}
	s.Spec.Replicas = int32(replicas)
	if _, err := c.As(a).AppsV1().StatefulSets(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("scale %s/%s: %w", ns, name, err)
	}
	return nil
}

// firstEventSince is the first event of a reason in a namespace at or
// after since.
func (c *Cluster) firstEventSince(ctx context.Context, ns, reason string, since time.Time) (time.Time, error) {
	var first time.Time
	err := until(ctx, 2*time.Minute, reason, func() (bool, error) {
		evs, err := c.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			t := ev.EventTime.Time
			if t.IsZero() {
				t = ev.FirstTimestamp.Time
			}
			if t.Before(since.Truncate(time.Second)) {
				continue
			}
			if first.IsZero() || t.Before(first) {
				first = t.UTC()
			}
		}
		return !first.IsZero(), nil
	})
	return first, err
}

func runStorageClassDeleted(ctx context.Context, c *Cluster, e *Expected) (string, error) {
	e.Nodes = Scale(c, e.Family)
	fleet, err := c.Nodes(ctx, e.Nodes)
	if err != nil {
		return "", err
	}
	perm := c.rng.Perm(len(teamNamespaces))
	ns, other := teamNamespaces[perm[0]], teamNamespaces[perm[1]]
	apps := []string{"checkpoint-store", "feature-cache", "vector-index", "dataset-shards", "kv-cache"}
	aperm := c.rng.Perm(len(apps))
	name, neighbour := apps[aperm[0]], apps[aperm[1]]
	victim := Pick(c, []string{"fast-ssd", "nvme-local", "ssd-regional"})
	kept, decoy := "premium-ssd", Pick(c, []string{"standard-hdd", "legacy-hdd"})
	if err := c.Background(ctx); err != nil {
		return "", err
	}
	prov, err := c.startProvisioner(ctx)
	if err != nil {
		return "", err
	}
	defer prov.Stop()
	for _, sc := range []struct{ name, tier string }{{victim, "ssd"}, {kept, "ssd"}, {decoy, "hdd"}} {
		if err := c.storageClass(ctx, routineActor, sc.name, sc.tier); err != nil {
			return "", err
		}
	}
	replicas := c.Between(4, 8)
	if err := c.statefulSet(ctx, routineActor, ns, name, replicas, victim, Template{Image: "registry.example/" + name + ":2.2"}); err != nil {
		return "", err
	}
	neighbourReplicas := c.Between(4, 8)
	if err := c.statefulSet(ctx, routineActor, other, neighbour, neighbourReplicas, kept, Template{Image: "registry.example/" + neighbour + ":1.5"}); err != nil {
		return "", err
	}
	actor, err := c.routineThenActor(ctx, fleet)
	if err != nil {
		return "", err
	}
	decoyAt := Now()
	if err := c.As(actor).StorageV1().StorageClasses().Delete(ctx, decoy, metav1.DeleteOptions{}); err != nil {
		return "", fmt.Errorf("delete storageclass %s: %w", decoy, err)
	}
	e.Decoys = []Change{{Ref: "StorageClass/" + decoy, Dimension: "deleted", At: decoyAt, Actor: &actor}}
	Sleep(ctx, c.Dur(4*time.Second, 10*time.Second))
	lastGood := Now()
	Sleep(ctx, time.Second)
	at := Now()
	if err := c.As(actor).StorageV1().StorageClasses().Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		return "", fmt.Errorf("delete storageclass %s: %w", victim, err)
	}
	ref := "StorageClass/" + victim
	e.Changes = []Change{{Ref: ref, Dimension: "deleted", At: at, Actor: &actor}}
	Sleep(ctx, c.Dur(5*time.Second, 15*time.Second))
	// Automation scales both up at once (more shards for a bigger run).
	more := c.Between(3, 6)
	scaled := Now()
	if err := c.scaleStatefulSet(ctx, routineActor, other, neighbour, neighbourReplicas+more); err != nil {
		return "", err
	}
	if err := c.scaleStatefulSet(ctx, routineActor, ns, name, replicas+more); err != nil {
		return "", err
	}
	firstBad, err := c.firstEventSince(ctx, ns, "FailedScheduling", scaled)
	if err != nil {
		return "", err
	}
	Sleep(ctx, c.Dur(20*time.Second, 30*time.Second))
	e.Boundary = crashBoundary(lastGood, firstBad)
	e.Slice = map[string]string{"storageclass/" + victim: "(deleted)"}
	e.Population = map[string]string{"owner/StatefulSet": name}
	e.CounterexampleDiffersIn = []string{"storageclass/" + victim}
	e.Mitigation = []Action{{Action: "rollback", Target: ref}}
	e.extra("newReplicas", more)
	return fmt.Sprintf(`A StatefulSet's new replicas never start.

## What on-call saw
%s/%s was scaled from %d to %d replicas by automation; its new pods are all
Pending, its old ones still run. %s/%s, scaled up at the same moment, is fine.
A cleanup of unused cluster resources ran today.`, ns, name, replicas, replicas+more, other, neighbour), nil
}
