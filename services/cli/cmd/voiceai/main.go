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
	// then exits 2.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
