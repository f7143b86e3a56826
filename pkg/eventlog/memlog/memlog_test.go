package memlog

import (
	"context"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/eventlogtest"
)

func TestConforms(t *testing.T) {
	eventlogtest.Run(t, func(*testing.T) eventlog.Store { return New() })
}

// Beyond the duplicate window a retried create is no longer deduplicated
// by its id but still found on its subject, as on JetStream.
func TestRetryBeyondTheWindow(t *testing.T) {
	s, ctx := New(), context.Background()
	now := time.Unix(1_800_000_000, 0)
	s.Now = func() time.Time { return now }
	first, err := s.Append(ctx, "test.a", 0, "cmd", eventlog.Event{Type: "t"})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(s.Window)
	again, err := s.Append(ctx, "test.a", 0, "cmd", eventlog.Event{Type: "t"})
	if err != nil || !again.Duplicate || again.Seq != first.Seq {
		t.Fatalf("retry beyond the window: %+v %v", again, err)
	}
}
