package memory

import (
	"testing"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/attemptlogtest"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/historytest"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/queuetest"
)

// The memory adapters pass the suites the stream adapters pass (in
// package adapters).

func TestAttemptLogConforms(t *testing.T) {
	attemptlogtest.Run(t, func(*testing.T) (app.AttemptLog, func() app.AttemptLog) {
		l := NewAttemptLog()
		return l, func() app.AttemptLog { return l } // memory is all it has
	})
}

func TestQueueConforms(t *testing.T) {
	queuetest.Run(t, func(*testing.T) (app.Queue, func() queuetest.Stored) {
		q := NewQueue()
		return q, func() queuetest.Stored { return queuetest.Stored{Events: q.Events(), Jobs: q.Queued()} }
	})
}

func TestHistoryConforms(t *testing.T) {
	historytest.Run(t, func(*testing.T) (app.DeliveryHistory, func(...*webhooksv1.DeliveryAttempt)) {
		h := NewHistory()
		return h, h.Store
	})
}
