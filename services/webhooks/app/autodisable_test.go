package app_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// The auto-disable rule on the in-memory log, registry and failure runs:
// a webhook is disabled once its deliveries failed for good N times in a
// row over at least the rule's time; a success or a user's re-enabling
// starts the count again; test deliveries and retried attempts count for
// nothing; and the fan-out matches no disabled webhook.
func TestAutoDisableAfterARunOfFailures(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	reg := f.app.Registry.(*memory.Registry)
	ad := &app.AutoDisabler{Repo: f.app.Webhooks, Registry: reg, Runs: memory.NewRunLog(), Rule: domain.AutoDisable{Failures: 3, Over: 10 * time.Minute}}
	w, _ := f.create(t, "")
	n := 0
	// outcome records an attempt at the fixture's clock, as the dispatcher
	// would, and reports whether it disabled the webhook.
	outcome := func(success, final, test bool, code int32) bool {
		t.Helper()
		n++
		att := &webhooksv1.DeliveryAttempt{AttemptId: "att" + strconv.Itoa(n), WorkspaceId: "ws_a", WebhookId: w.WebhookId,
			AtUnixMs: f.clock.UnixMilli(), Success: success, Final: final, Test: test, ResponseCode: code}
		disabled, err := ad.Observe(ctx, att)
		if err != nil {
			t.Fatal(err)
		}
		return disabled
	}
	get := func() *webhooksv1.Webhook {
		t.Helper()
		cur, err := f.app.Get("ws_a", w.WebhookId)
		if err != nil {
			t.Fatal(err)
		}
		return cur
	}
	start := f.clock.Add(time.Second)
	for i := range 3 {
		f.clock = start.Add(time.Duration(i) * time.Minute)
		if outcome(false, true, false, 500) {
			t.Fatalf("disabled after %d failures within %s", i+1, f.clock.Sub(start))
		}
	}
	// Neither a retried attempt nor a test delivery counts.
	outcome(false, false, false, 503)
	outcome(false, true, true, 503)
	if run := ad.Runs.Run(w.WebhookId, app.EnabledAt(get())); run.Failures != 3 || !run.First.Equal(start) || run.LastCode != 500 || !get().Active {
		t.Fatalf("the run: %+v", run)
	}
	f.clock = start.Add(11 * time.Minute)
	if !outcome(false, true, false, 502) {
		t.Fatal("not disabled after 4 failures over 11 minutes")
	}
	cur := get()
	if cur.Active || cur.DisabledReason != domain.DisabledFailing || cur.GetDisabledAtUnix() != f.clock.Unix() || cur.LastFailureCode != 502 || cur.LastFailureAtUnixMs != f.clock.UnixMilli() {
		t.Fatalf("auto-disabled: %+v", cur)
	}
	if got := reg.Match("ws_a", "ticket_created", f.clock); len(got) != 0 {
		t.Fatalf("the fan-out still matches the disabled webhook: %v", got)
	}
	// A failure of a job already taken writes nothing more.
	if outcome(false, true, false, 500) {
		t.Fatal("a disabled webhook was disabled again")
	}

	// Disabled by a user meanwhile, it is theirs (no longer automatic).
	if upd, err := f.app.Update(ctx, principal.Caller{Principal: f.caller}, w.WebhookId, domain.Input{Active: ptr(false)}); err != nil || upd.Active || upd.DisabledReason != "" {
		t.Fatalf("disabled by a user: %+v %v", upd, err)
	}

	// Enabled again by a user: deliveries resume, the run starts over.
	f.clock = f.clock.Add(time.Minute)
	if _, err := f.app.Update(ctx, principal.Caller{Principal: f.caller}, w.WebhookId, domain.Input{Active: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	cur = get()
	if !cur.Active || cur.DisabledReason != "" || ad.Runs.Run(w.WebhookId, app.EnabledAt(cur)).Failures != 0 || len(reg.Match("ws_a", "ticket_created", f.clock)) != 1 {
		t.Fatalf("enabled again: %+v", cur)
	}
	f.clock = f.clock.Add(time.Hour)
	if outcome(false, true, false, 500) {
		t.Fatal("one failure after re-enabling disabled it again")
	}

	// A success ends the run: two more failures, even much later, do not trip.
	f.clock = f.clock.Add(time.Second)
	outcome(true, true, false, 200)
	f.clock = f.clock.Add(time.Hour)
	outcome(false, true, false, 500)
	f.clock = f.clock.Add(time.Hour)
	if outcome(false, true, false, 500) || !get().Active {
		t.Fatal("disabled after 2 failures in a row")
	}
	// A success recorded late (its record arrived after a later failure)
	// ends only the failures before it.
	late := f.clock.Add(-30 * time.Minute)
	f.clock, late = late, f.clock
	outcome(true, true, false, 200)
	f.clock = late
	if run := ad.Runs.Run(w.WebhookId, app.EnabledAt(get())); run.Failures != 1 || run.LastCode != 500 {
		t.Fatalf("after a late success: %+v", run)
	}

	// The delivery log the API reads counts the same way.
	f.attempts.Record(ctx, &webhooksv1.DeliveryAttempt{AttemptId: "x1", WebhookId: w.WebhookId, AtUnixMs: f.clock.UnixMilli(), Final: true, ResponseCode: 504})
	if run := f.app.RunOf(get()); run.Failures != 1 || run.LastCode != 504 {
		t.Fatalf("the API's run: %+v", run)
	}

	// Failures: 0 never disables.
	ad.Rule = domain.AutoDisable{}
	for range 50 {
		f.clock = f.clock.Add(time.Hour)
		if outcome(false, true, false, 500) {
			t.Fatal("disabled under a rule that never trips")
		}
	}
}
