//go:build tools

// Package tools pins promtool's module, so that `go build` in this folder
// builds the version go.mod names.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
