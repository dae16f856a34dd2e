// Package gencmd is what the benchmark's input generators (nodeloggen,
// metricsgen) share as commands: the signal context, faultline's exit
// codes, and writing to -o or to standard output.
package gencmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes, as in the rest of faultline.
const (
	ExitOK        = 0
	ExitFailure   = 1
	ExitUsage     = 2
	ExitInterrupt = 130
)

// RunFunc is a generator's whole run: its arguments in, its exit code out.
type RunFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// Main runs run with a context that Ctrl-C and SIGTERM cancel, and exits
// with its code.
func Main(run RunFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// UsageCode is the exit code of flags that did not parse: 0 for -help,
// else 2, after the error and hint (a command line that works).
func UsageCode(err error, stderr io.Writer, hint string) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	fmt.Fprintf(stderr, "error: %s\nTry: %s\n", err, hint)
	return ExitUsage
}

// Code is the exit code of a run that ended with err, printed.
func Code(err error, stderr io.Writer) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, context.Canceled):
		return ExitInterrupt
	}
	fmt.Fprintf(stderr, "error: %s\n", err)
	return ExitFailure
}

// Output hands write the file path, created anew, or stdout when path is
// "", and closes the file.
func Output(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "" {
		return write(stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
