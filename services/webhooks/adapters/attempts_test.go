package adapters

import (
	"context"
	"log/slog"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/attemptlogtest"
)

func TestStreamAttemptLog(t *testing.T) {
	attemptlogtest.Run(t, func(t *testing.T) (app.AttemptLog, func() app.AttemptLog) {
		js := testenv.StreamsAt(t, EnsureStreams)
		ctx := context.Background()
		log := slog.New(slog.DiscardHandler)
		// A restart: a new log replaying the stream.
		reopen := func() app.AttemptLog {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			l := memory.NewAttemptLog()
			if err := FollowAttemptLog(ctx, js, l, log); err != nil {
				t.Fatal(err)
			}
			return StreamAttemptLog{AttemptLog: l, JS: js}
		}
		return reopen(), reopen
	})
}
