//go:build tools

// Package tools pins Prometheus's module, so that `go build` in this folder
// builds promtool and the server at the version go.mod names.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
