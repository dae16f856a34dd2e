package apiload

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// created ignores AlreadyExists: setup is idempotent.
func created(what string, err error) error {
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %s: %w", what, err)
	}
	return nil
}

// Namespace creates a namespace if it is missing.
func Namespace(ctx context.Context, c kubernetes.Interface, ns string) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	return created("namespace", err)
}

// UserPrefix is the user name the apiserver gives the workers'
// ServiceAccounts, up to their number.
func UserPrefix(ns, prefix string) string { return "system:serviceaccount:" + ns + ":" + prefix }

// WorkerName is worker i's ServiceAccount: PREFIX followed by four digits.
func WorkerName(prefix string, i int) string { return fmt.Sprintf("%s%04d", prefix, i) }

// NamespaceServiceAccounts is the group of every ServiceAccount in ns.
func NamespaceServiceAccounts(ns string) []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:serviceaccounts:" + ns}}
}

// ServiceAccountSubjects are the named ServiceAccounts of ns.
func ServiceAccountSubjects(ns string, names []string) []rbacv1.Subject {
	out := make([]rbacv1.Subject, len(names))
	for i, n := range names {
		out[i] = rbacv1.Subject{Kind: "ServiceAccount", Namespace: ns, Name: n}
	}
	return out
}

// Role creates a Role and a RoleBinding of the same name that grants it
// to the subjects.
func Role(ctx context.Context, c kubernetes.Interface, ns, name string, rules []rbacv1.PolicyRule, subjects []rbacv1.Subject) error {
	_, err := c.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	if err := created("role", err); err != nil {
		return err
	}
	_, err = c.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   subjects,
	}, metav1.CreateOptions{})
	return created("rolebinding", err)
}

// ClusterRole creates a ClusterRole and a ClusterRoleBinding of the same
// name that grants it to the subjects.
func ClusterRole(ctx context.Context, c kubernetes.Interface, name string, rules []rbacv1.PolicyRule, subjects []rbacv1.Subject) error {
	_, err := c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{})
	if err := created("clusterrole", err); err != nil {
		return err
	}
	_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects:   subjects,
	}, metav1.CreateOptions{})
	return created("clusterrolebinding", err)
}

// ServiceAccounts creates n ServiceAccounts in ns named WorkerName(prefix,
// i), each with a token of its own (valid an hour), parallel at a time,
// and returns the tokens in order.
func ServiceAccounts(ctx context.Context, c kubernetes.Interface, ns, prefix string, n, parallel int) ([]string, error) {
	tokens := make([]string, n)
	errs := make([]error, n)
	work := make(chan int)
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range max(1, parallel) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if tokens[i], errs[i] = ServiceAccount(ctx, c, ns, WorkerName(prefix, i)); errs[i] != nil {
					failed.Store(true)
				}
			}
		}()
	}
	for i := range n {
		if ctx.Err() != nil || failed.Load() {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return tokens, ctx.Err()
}

// ServiceAccount creates a ServiceAccount (if missing) and returns a token
// of its own, valid an hour.
func ServiceAccount(ctx context.Context, c kubernetes.Interface, ns, name string) (string, error) {
	_, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err := created("serviceaccount "+name, err); err != nil {
		return "", err
	}
	tr, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(time.Hour.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s: %w", name, err)
	}
	return tr.Status.Token, nil
}

// PodToken returns a token of ServiceAccount sa bound to a pod, as the
// kubelet mounts one: the apiserver names the pod in the user.extra of
// every request made with it (authentication.kubernetes.io/pod-name).
func PodToken(ctx context.Context, c kubernetes.Interface, ns, sa string, pod *corev1.Pod) (string, error) {
	tr, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(time.Hour.Seconds())),
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s bound to pod %s: %w", sa, pod.Name, err)
	}
	return tr.Status.Token, nil
}
