// Command voiceai-store runs only the embedded document store (FerretDB on
// SQLite files in the directory given as its argument) and prints its
// MongoDB URI on the first line of its output. It stops on SIGINT or
// SIGTERM, and, with -stdin-lifeline, when its standard input closes: a
// test that starts it gives it a pipe, so the store ends with the test
// process even when that is killed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/voiceai-platform/voiceai/pkg/embedded/docstore"
)

func main() {
	lifeline := flag.Bool("stdin-lifeline", false, "stop when standard input closes")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: voiceai-store [-stdin-lifeline] <data dir>")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *lifeline {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}
	if err := docstore.Serve(ctx, flag.Arg(0), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "voiceai-store:", err)
		os.Exit(1)
	}
}
