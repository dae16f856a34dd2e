package audit

import "testing"

func TestPodOf(t *testing.T) {
	tests := []struct {
		name string
		u    userInfo
		want string
	}{
		{"a bound token", userInfo{Username: "system:serviceaccount:ml:reader",
			Extra: map[string][]string{"authentication.kubernetes.io/pod-name": {"reader-0"}}}, "ml/reader-0"},
		{"an unbound token", userInfo{Username: "system:serviceaccount:ml:reader"}, ""},
		{"not a ServiceAccount", userInfo{Username: "alice", Extra: map[string][]string{"authentication.kubernetes.io/pod-name": {"x"}}}, ""},
		{"two pods is no pod", userInfo{Username: "system:serviceaccount:ml:reader",
			Extra: map[string][]string{"authentication.kubernetes.io/pod-name": {"a", "b"}}}, ""},
	}
	for _, tt := range tests {
		if got := podOf(tt.u); got != tt.want {
			t.Errorf("%s: podOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}
