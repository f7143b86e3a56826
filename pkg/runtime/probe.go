package runtime

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/obs"
)

// ProbeCommand is the argument that makes a service binary ask its own
// /readyz instead of running: `/service probe` exits 0 when the running
// replica is ready. Container images without a shell or curl (distroless)
// need it for their health checks.
const ProbeCommand = "probe"

// probeRequested reports whether the process was started as a probe.
func probeRequested() bool {
	return len(os.Args) == 2 && os.Args[1] == ProbeCommand
}

// Probe asks the replica whose internal endpoint listens on metricsAddr
// whether it is ready: nil when /readyz answers 200, otherwise why not.
func Probe(ctx context.Context, metricsAddr string) error {
	if metricsAddr == "" || metricsAddr == obs.MetricsOff {
		return fmt.Errorf("VOICEAI_METRICS_ADDR is %q: no readiness endpoint to ask", metricsAddr)
	}
	host, port, err := net.SplitHostPort(metricsAddr)
	if err != nil {
		return fmt.Errorf("VOICEAI_METRICS_ADDR %q: %w", metricsAddr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1" // listening on every interface: ask on loopback
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("not ready: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("not ready (%s): %s", resp.Status, body)
	}
	return nil
}
