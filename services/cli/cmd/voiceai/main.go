// Command voiceai is the platform's command line; see the cli package.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/voiceai-platform/voiceai/services/cli"
)

func main() {
	// Ctrl-C cancels the request or the wait in progress; the command
	// then exits 2, once it has cleaned up (listen deletes its webhook).
	// A second Ctrl-C ends it at once: the signal's default again.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
