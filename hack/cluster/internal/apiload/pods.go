package apiload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// PodsByIndex maps the completion indexes of an Indexed Job's pods (label
// app=JOB) to their names: worker i is the pod of index i.
func PodsByIndex(ctx context.Context, c kubernetes.Interface, ns, job string) (map[int]string, error) {
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + job})
	if err != nil {
		return nil, fmt.Errorf("list pods of %s: %w", job, err)
	}
	out := map[int]string{}
	for _, p := range pods.Items {
		if i, err := strconv.Atoi(p.Labels["batch.kubernetes.io/job-completion-index"]); err == nil {
			out[i] = p.Name
		}
	}
	return out, nil
}

// GiveUpMessage is what a naive worker prints as it exits on the error.
func GiveUpMessage(cause error) string {
	switch {
	case apierrors.IsTooManyRequests(cause) || strings.Contains(cause.Error(), "too many requests"):
		return "the server has received too many requests and has asked us to try again later"
	case strings.Contains(cause.Error(), "deadline") || strings.Contains(cause.Error(), "Timeout"):
		return "timed out waiting for the apiserver"
	case apierrors.IsInvalid(cause) || apierrors.IsNotFound(cause):
		// A write the apiserver refused as invalid, or a resource it no
		// longer serves: a client prints why.
		var st apierrors.APIStatus
		if errors.As(cause, &st) {
			return st.Status().Message
		}
	}
	return "worker gave up"
}

// chaosStage is kwok's stage that makes a running container exit.
const chaosStage = "pod-container-running-failed.stage.kwok.x-k8s.io"

// ExitPod makes a pod's container exit 1 with the message, through kwok's
// chaos stage: the annotations say how, the label says now. (kwok's stage
// template breaks on a colon: colons become " -".)
func ExitPod(ctx context.Context, c kubernetes.Interface, ns, pod, msg string) error {
	msg = strings.ReplaceAll(msg, ":", " -")
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{chaosStage + "/reason": "Error", chaosStage + "/message": msg, chaosStage + "/exit-code": "1"},
		"labels":      map[string]string{chaosStage: "true"},
	}})
	if err != nil {
		return err
	}
	_, err = c.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
