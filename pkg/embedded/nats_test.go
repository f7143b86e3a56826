package embedded

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A write error nats-server keeps is told to WriteFailed, from the log
// lines it writes for one (their formats as in nats-server's filestore.go
// and stream.go); other errors and warnings are not.
func TestAWriteErrorTheServerKeepsIsTold(t *testing.T) {
	var told []string
	l := serverLog{log: slog.New(slog.DiscardHandler), writeFailed: func(msg string) { told = append(told, msg) }}
	enospc := errors.New("write /data/nats/jetstream/$G/streams/PLATFORM/msgs/9.blk: no space left on device")
	l.Errorf("Filestore [%s] Critical write error: %v", "PLATFORM", enospc)
	l.Errorf("JetStream stream '%s > %s' critical write error: %v", "$G", "PLATFORM", enospc)
	l.Errorf("JetStream failed to store a msg on stream '%s > %s': %v", "$G", "PLATFORM", enospc)
	l.Warnf("Filestore [%s] Critical write error: %v", "X", enospc) // not an error: not told
	if len(told) != 2 {
		t.Fatalf("told %d times: %q; want the two critical write errors", len(told), told)
	}
	if told[1] != "JetStream stream '$G > PLATFORM' critical write error: "+enospc.Error() {
		t.Errorf("told %q", told[1])
	}
}

// A port already taken, or a store directory that cannot be written, is
// said at once with its cause, not as a server never ready.
func TestStartNATSSaysWhyItCannotStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	if _, err := StartNATS(NATSOptions{StoreDir: t.TempDir(), Port: port}); err == nil || !strings.Contains(err.Error(), "VOICEAI_EMBEDDED_NATS_PORT") {
		t.Fatalf("a taken port: %v", err)
	}
	// A store directory under a file: nothing can be written there.
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := StartNATS(NATSOptions{StoreDir: filepath.Join(file, "nats"), Port: -1}); err == nil || !strings.Contains(err.Error(), "cannot be written") {
		t.Fatalf("a store directory that cannot be made: %v", err)
	}
}
