package memory

import (
	"fmt"
	"sync"
	"testing"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/attemptlogtest"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/historytest"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/queuetest"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
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

// A webhook deleted takes what the in-memory logs kept of it (up to 100
// attempts and 1 MiB of bodies in the delivery log, its failure runs):
// before, they stayed for the life of the process, and a restart's replay
// of the attempts stream brought back those of every webhook ever
// deleted within it.
func TestADeletedWebhooksLogsAreDropped(t *testing.T) {
	reg := NewRegistry()
	l := NewAttemptLog()
	l.FollowDeletions(reg)
	hook := func(id string, deleted bool) *webhooksv1.Webhook {
		w := &webhooksv1.Webhook{WebhookId: id, WorkspaceId: "ws_1", Active: true}
		if deleted {
			at := int64(1)
			w.DeletedAtUnix = &at
		}
		return w
	}
	failed := func(id string, n int) *webhooksv1.DeliveryAttempt {
		return &webhooksv1.DeliveryAttempt{AttemptId: fmt.Sprint(id, ":", n), WebhookId: id, AtUnixMs: int64(n), Final: true, RequestBody: []byte("{}")}
	}
	reg.Put(1, hook("whk_gone", false))
	reg.Put(2, hook("whk_kept", false))
	for n := range 5 {
		l.Add(failed("whk_gone", n))
		l.Add(failed("whk_kept", n))
	}
	if len(l.Recent("whk_gone", domain.LogFilter{}, 10)) != 5 || l.Run("whk_gone", time.Time{}).Failures != 5 {
		t.Fatal("the fixture logged nothing: it tests nothing")
	}
	reg.Put(3, hook("whk_gone", true))
	l.Add(failed("whk_gone", 9)) // one recorded before the deletion, replayed after it
	if n := len(l.Recent("whk_gone", domain.LogFilter{}, 10)); n != 0 {
		t.Fatalf("%d attempts of a deleted webhook kept", n)
	}
	if run := l.Run("whk_gone", time.Time{}); run.Failures != 0 {
		t.Fatalf("a deleted webhook's failure run kept: %+v", run)
	}
	if n := len(l.Recent("whk_kept", domain.LogFilter{}, 10)); n != 5 {
		t.Fatalf("%d attempts of the webhook kept; want its 5", n)
	}
}
