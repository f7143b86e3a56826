package main

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/services/allinone/stack"
)

// An internal endpoint address another process holds stops the platform
// at start, naming the variable, before anything starts: it never runs
// without /readyz.
func TestServeRefusesAMetricsAddressItCannotListenOn(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	// Were the address not refused, the whole stack would start and serve
	// until this context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = serveOnce(ctx, stack.Config{MetricsAddr: addr, DataDir: t.TempDir()}, slog.New(slog.DiscardHandler), true)
	if err == nil || !strings.Contains(err.Error(), "VOICEAI_METRICS_ADDR") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("serve with %s taken = %v, want an error naming VOICEAI_METRICS_ADDR and the address", addr, err)
	}
}
