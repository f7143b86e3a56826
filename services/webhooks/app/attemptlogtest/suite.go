// Package attemptlogtest is the conformance suite of the delivery
// attempt log (app.AttemptLog): every implementation (in memory, on the
// WEBHOOK_ATTEMPTS stream) keeps an attempt id once, answers newest
// first through the same filters, summarises the same health, and keeps
// what it recorded for the next log over the same storage.
package attemptlogtest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Opener opens a log over fresh storage; reopen opens another log over
// the same storage (a restarted process).
type Opener func(t *testing.T) (log app.AttemptLog, reopen func() app.AttemptLog)

const t0 = 1_800_000_000_000 // ms

func attempt(webhookID string, n int, ok bool) *webhooksv1.DeliveryAttempt {
	code := int32(200)
	if !ok {
		code = 500
	}
	return &webhooksv1.DeliveryAttempt{
		AttemptId: fmt.Sprintf("evt_%d:%s:1", n, webhookID), EventId: fmt.Sprintf("evt_%d", n), WorkspaceId: "ws_a",
		WebhookId: webhookID, Event: []string{"ticket_created", "call_ended"}[n%2], AtUnixMs: t0 + int64(n)*1000,
		Success: ok, ResponseCode: code, Final: true, RequestBody: []byte(`{"n":1}`),
	}
}

func ids(as []*webhooksv1.DeliveryAttempt) []string {
	return testkit.IDs(as, (*webhooksv1.DeliveryAttempt).GetEventId)
}

func record(t *testing.T, l app.AttemptLog, as ...*webhooksv1.DeliveryAttempt) {
	t.Helper()
	for _, a := range as {
		if err := l.Record(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
}

// Run checks open against what app.AttemptLog promises.
func Run(t *testing.T, open Opener) {
	t.Run("recent is newest first, filtered and limited, and says how far back it holds", func(t *testing.T) {
		l, _ := open(t)
		// Recorded out of order: 3 arrives after 4.
		record(t, l, attempt("whk_1", 1, true), attempt("whk_1", 2, false), attempt("whk_1", 4, true), attempt("whk_1", 3, false), attempt("whk_2", 5, true))
		if got, want := l.Recent("whk_1", domain.LogFilter{}, 10), []string{"evt_4", "evt_3", "evt_2", "evt_1"}; !slices.Equal(ids(got), want) {
			t.Fatalf("recent: %v, want %v", ids(got), want)
		}
		if got := l.Recent("whk_1", domain.LogFilter{}, 2); !slices.Equal(ids(got), []string{"evt_4", "evt_3"}) {
			t.Fatalf("limit 2: %v", ids(got))
		}
		if got := l.Recent("whk_1", domain.LogFilter{Status: domain.LogFailed}, 10); !slices.Equal(ids(got), []string{"evt_3", "evt_2"}) {
			t.Fatalf("failed only: %v", ids(got))
		}
		if got := l.Recent("whk_1", domain.LogFilter{Event: "call_ended", FromMs: t0 + 2000}, 10); !slices.Equal(ids(got), []string{"evt_3"}) {
			t.Fatalf("call_ended from evt_2 on: %v", ids(got))
		}
		if got := l.Recent("whk_1", domain.LogFilter{ToMs: t0 + 3000}, 10); !slices.Equal(ids(got), []string{"evt_2", "evt_1"}) {
			t.Fatalf("before evt_3: %v", ids(got))
		}
		if got := l.Recent("whk_none", domain.LogFilter{}, 10); len(got) != 0 {
			t.Fatalf("a webhook without attempts: %v", ids(got))
		}
		if since, none := l.HeldSince("whk_1"), l.HeldSince("whk_none"); since != t0+1000 || none != 0 {
			t.Fatalf("held since %d, and %d with none held; want %d and 0", since, none, t0+1000)
		}
	})

	t.Run("an attempt id is kept once", func(t *testing.T) {
		l, _ := open(t)
		a := attempt("whk_1", 1, false)
		record(t, l, a, attempt("whk_1", 2, true), a)
		if got := l.Recent("whk_1", domain.LogFilter{}, 10); !slices.Equal(ids(got), []string{"evt_2", "evt_1"}) {
			t.Fatalf("recorded twice: %v", ids(got))
		}
		if h := l.Health("whk_1"); h.Attempts != 2 {
			t.Fatalf("health counts the copy: %+v", h)
		}
	})

	t.Run("find answers the newest match", func(t *testing.T) {
		l, _ := open(t)
		record(t, l, attempt("whk_1", 1, false), attempt("whk_1", 2, false), attempt("whk_1", 3, true))
		failed := func(a *webhooksv1.DeliveryAttempt) bool { return !a.GetSuccess() }
		if a := l.Find("whk_1", failed); a.GetEventId() != "evt_2" {
			t.Fatalf("find: %v", a)
		}
		if a := l.Find("whk_2", failed); a != nil {
			t.Fatalf("another webhook's attempt: %v", a)
		}
	})

	t.Run("health leaves tests out", func(t *testing.T) {
		l, _ := open(t)
		test := attempt("whk_1", 9, false)
		test.Test, test.Error = true, "a test"
		record(t, l, attempt("whk_1", 1, true), attempt("whk_1", 2, true), attempt("whk_1", 3, false), attempt("whk_1", 4, false), test)
		h := l.Health("whk_1")
		want := domain.Health{Attempts: 4, SuccessRate: 0.5, ConsecutiveFailures: 2, LastSuccessUnixMs: t0 + 2000, LastFailureUnixMs: t0 + 4000, LastResponseCode: 500}
		if h != want {
			t.Fatalf("health %+v, want %+v", h, want)
		}
		if h := l.Health("whk_none"); h != (domain.Health{}) {
			t.Fatalf("a webhook without attempts: %+v", h)
		}
	})

	t.Run("what was recorded durably is there for a reopen at once", func(t *testing.T) {
		l, reopen := open(t)
		a := attempt("whk_1", 1, false)
		for range 2 {
			if err := l.RecordDurable(context.Background(), a); err != nil {
				t.Fatal(err)
			}
		}
		if got := l.Recent("whk_1", domain.LogFilter{}, 10); !slices.Equal(ids(got), []string{"evt_1"}) {
			t.Fatalf("recorded twice: %v", ids(got))
		}
		if got := reopen().Recent("whk_1", domain.LogFilter{}, 10); !slices.Equal(ids(got), []string{"evt_1"}) {
			t.Fatalf("the reopened log holds %v, want [evt_1]", ids(got))
		}
	})

	t.Run("what was recorded survives a reopen", func(t *testing.T) {
		l, reopen := open(t)
		record(t, l, attempt("whk_1", 1, true), attempt("whk_1", 2, false))
		var got []string
		testkit.Eventually(t, 5*time.Second, "the reopened log holds both attempts", func() bool {
			out := reopen().Recent("whk_1", domain.LogFilter{}, 10)
			got = ids(out)
			return slices.Equal(got, []string{"evt_2", "evt_1"})
		})
	})
}
