package main

import (
	"encoding/json"
	"time"
)

// Output: audit.k8s.io/v1 Event, fields in the order kube-apiserver writes.

type event struct {
	Kind                     string            `json:"kind"`
	APIVersion               string            `json:"apiVersion"`
	Level                    string            `json:"level"`
	AuditID                  string            `json:"auditID"`
	Stage                    string            `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     *userInfo         `json:"user"`
	ImpersonatedUser         *userInfo         `json:"impersonatedUser,omitempty"`
	SourceIPs                []string          `json:"sourceIPs,omitempty"`
	UserAgent                string            `json:"userAgent,omitempty"`
	ObjectRef                *objectRef        `json:"objectRef,omitempty"`
	ResponseStatus           *status           `json:"responseStatus,omitempty"`
	RequestObject            json.RawMessage   `json:"requestObject,omitempty"`
	ResponseObject           json.RawMessage   `json:"responseObject,omitempty"`
	RequestReceivedTimestamp microTime         `json:"requestReceivedTimestamp"`
	StageTimestamp           microTime         `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

type userInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

type objectRef struct {
	Resource        string `json:"resource,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	APIGroup        string `json:"apiGroup,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Subresource     string `json:"subresource,omitempty"`
}

// status is metav1.Status; "metadata" is always written, as upstream does.
type status struct {
	Kind       string         `json:"kind,omitempty"`
	APIVersion string         `json:"apiVersion,omitempty"`
	Metadata   struct{}       `json:"metadata"`
	Status     string         `json:"status,omitempty"`
	Message    string         `json:"message,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Details    *statusDetails `json:"details,omitempty"`
	Code       int            `json:"code,omitempty"`
}

type statusDetails struct {
	Name              string `json:"name,omitempty"`
	Group             string `json:"group,omitempty"`
	Kind              string `json:"kind,omitempty"`
	UID               string `json:"uid,omitempty"`
	RetryAfterSeconds int    `json:"retryAfterSeconds,omitempty"`
}

// microTime is a Unix time in nanoseconds, written as metav1.MicroTime does:
// RFC 3339 in UTC, truncated to microseconds.
type microTime int64

func (t microTime) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 32)
	b = append(b, '"')
	b = time.Unix(0, int64(t)).UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	return append(b, '"'), nil
}
