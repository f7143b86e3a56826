package memory

import (
	"fmt"
	"sync"
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

// An attempt the log handed out keeps its request body while later
// attempts push it past BodyBudget: the log drops the body of its own
// copy only. Before, it cleared the body on the attempt a resend was
// reading outside the lock (a data race; a resend could sign an empty
// body).
func TestAnAttemptHandedOutKeepsItsBodyPastTheBudget(t *testing.T) {
	l := NewAttemptLog()
	body := make([]byte, 300<<10)
	add := func(i int) {
		l.Add(&webhooksv1.DeliveryAttempt{AttemptId: fmt.Sprint("att_", i), WebhookId: "whk_1", AtUnixMs: int64(i), RequestBody: body})
	}
	isFirst := func(a *webhooksv1.DeliveryAttempt) bool { return a.GetAttemptId() == "att_0" }
	add(0)
	first := l.Find("whk_1", isFirst)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; i <= 5; i++ { // 1.8 MiB of bodies: the first one's goes
			add(i)
		}
	})
	for range 100 {
		if len(first.GetRequestBody()) != len(body) {
			t.Fatal("the body of an attempt handed out changed under its reader")
		}
	}
	wg.Wait()
	if kept := l.Find("whk_1", isFirst); kept == nil || kept.GetRequestBody() != nil {
		t.Fatalf("the log kept the oldest attempt's body past the budget: %v", kept != nil)
	}
}
