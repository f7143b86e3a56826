package embedded

import (
	"errors"
	"log/slog"
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
