// Command faultline investigates incidents on large Kubernetes and
// ML-training clusters from the evidence they leave. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/faultline/faultline/cmd/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.System())
	stop()
	os.Exit(code)
}
