package runtime

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/obs"
)

// serveProbes serves p's /readyz on a random loopback port and returns the
// address as a service would configure it (every interface).
func serveProbes(t *testing.T, p obs.Probes) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/readyz", p.ReadyHandler())
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return "0.0.0.0:" + port
}

func TestProbeAsksTheReplicasReadiness(t *testing.T) {
	var ready error = errors.New("starting")
	addr := serveProbes(t, obs.Probes{Ready: map[string]obs.Check{
		"started": func(context.Context) error { return ready },
	}})
	err := Probe(context.Background(), addr)
	if err == nil || !strings.Contains(err.Error(), "starting") {
		t.Fatalf("probe of a starting replica = %v, want not ready naming the failing check", err)
	}
	ready = nil
	if err := Probe(context.Background(), addr); err != nil {
		t.Fatalf("probe of a ready replica = %v", err)
	}
}

func TestProbeWithoutAnEndpointSaysWhy(t *testing.T) {
	for _, addr := range []string{"", obs.MetricsOff} {
		if err := Probe(context.Background(), addr); err == nil || !strings.Contains(err.Error(), "VOICEAI_METRICS_ADDR") {
			t.Errorf("Probe(%q) = %v, want an error naming VOICEAI_METRICS_ADDR", addr, err)
		}
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	if err := Probe(context.Background(), addr); err == nil {
		t.Fatal("probe of a replica that is not running succeeded")
	}
}
