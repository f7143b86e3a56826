package multiprocess

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An internal endpoint address another process holds stops the all-in-one
// platform at start, naming the variable, before anything starts: it never
// runs without /readyz.
func TestAllInOneRefusesAMetricsAddressItCannotListenOn(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	// Were the address not refused, the whole platform would start and
	// serve until this context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "allinone"))
	cmd.Env = append(os.Environ(), "VOICEAI_METRICS_ADDR="+addr, "VOICEAI_DATA_DIR="+t.TempDir(),
		"VOICEAI_HTTP_ADDR=127.0.0.1:0", "VOICEAI_EMBEDDED_NATS_PORT=-1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || ctx.Err() != nil {
		t.Fatalf("allinone with %s taken: %v (context %v), want exit status 1; output:\n%s", addr, err, ctx.Err(), out)
	}
	if !strings.Contains(string(out), "VOICEAI_METRICS_ADDR") || !strings.Contains(string(out), addr) {
		t.Fatalf("allinone with %s taken said:\n%s\nwant an error naming VOICEAI_METRICS_ADDR and the address", addr, out)
	}
}
