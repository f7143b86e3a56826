package app_test

import (
	"context"
	"testing"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// The auto-disable rule on the in-memory log and registry: a webhook is
// disabled once its deliveries failed for good N times in a row over at
// least the rule's time; a success or a user's re-enabling starts the
// count again; test deliveries and retried attempts count for nothing;
// and the fan-out matches no disabled webhook.
func TestAutoDisableAfterARunOfFailures(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rule := domain.AutoDisable{Failures: 3, Over: 10 * time.Minute}
	w, _ := f.create(t, "")
	reg := f.app.Registry.(*adapters.Registry)
	outcome := func(id string, success, final, test bool, code int32) bool {
		t.Helper()
		cur, err := f.app.Get("ws_a", id)
		if err != nil {
			t.Fatal(err)
		}
		att := &webhooksv1.DeliveryAttempt{WebhookId: id, AtUnixMs: f.clock.UnixMilli(), Success: success, Final: final, Test: test, ResponseCode: code}
		disabled, err := app.RecordOutcome(ctx, f.app.Webhooks, rule, cur, att)
		if err != nil {
			t.Fatal(err)
		}
		return disabled
	}
	get := func(id string) *webhooksv1.Webhook {
		t.Helper()
		cur, err := f.app.Get("ws_a", id)
		if err != nil {
			t.Fatal(err)
		}
		return cur
	}
	start := f.clock
	for i := range 3 {
		f.clock = start.Add(time.Duration(i) * time.Minute)
		if outcome(w.WebhookId, false, true, false, 500) {
			t.Fatalf("disabled after %d failures within %s", i+1, f.clock.Sub(start))
		}
	}
	// Neither a retried attempt nor a test delivery counts.
	outcome(w.WebhookId, false, false, false, 503)
	outcome(w.WebhookId, false, true, true, 503)
	if cur := get(w.WebhookId); cur.ConsecutiveFailures != 3 || cur.LastFailureCode != 500 || cur.FailingSinceUnixMs != start.UnixMilli() || !cur.Active {
		t.Fatalf("the run: %+v", cur)
	}
	f.clock = start.Add(11 * time.Minute)
	if !outcome(w.WebhookId, false, true, false, 502) {
		t.Fatal("not disabled after 4 failures over 11 minutes")
	}
	cur := get(w.WebhookId)
	if cur.Active || cur.DisabledReason != domain.DisabledFailing || cur.GetDisabledAtUnix() != f.clock.Unix() || cur.LastFailureCode != 502 || cur.LastFailureAtUnixMs != f.clock.UnixMilli() {
		t.Fatalf("auto-disabled: %+v", cur)
	}
	if got := reg.Match("ws_a", "ticket_created", f.clock); len(got) != 0 {
		t.Fatalf("the fan-out still matches the disabled webhook: %v", got)
	}
	// A failure of a job already taken changes nothing more.
	if outcome(w.WebhookId, false, true, false, 500) || get(w.WebhookId).ConsecutiveFailures != 4 {
		t.Fatal("a disabled webhook's run grew")
	}

	// Enabled again by a user: deliveries resume, the run starts over, the
	// latest failure stays on show.
	if _, err := f.app.Update(ctx, principal.Caller{Principal: f.caller}, w.WebhookId, domain.Input{Active: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	cur = get(w.WebhookId)
	if !cur.Active || cur.DisabledReason != "" || cur.ConsecutiveFailures != 0 || cur.LastFailureCode != 502 || len(reg.Match("ws_a", "ticket_created", f.clock)) != 1 {
		t.Fatalf("enabled again: %+v", cur)
	}
	f.clock = f.clock.Add(time.Hour)
	if outcome(w.WebhookId, false, true, false, 500) {
		t.Fatal("one failure after re-enabling disabled it again")
	}

	// A success ends the run: two more failures, even much later, do not trip.
	outcome(w.WebhookId, true, true, false, 200)
	if get(w.WebhookId).ConsecutiveFailures != 0 {
		t.Fatal("a success did not end the run")
	}
	f.clock = f.clock.Add(time.Hour)
	outcome(w.WebhookId, false, true, false, 500)
	f.clock = f.clock.Add(time.Hour)
	if outcome(w.WebhookId, false, true, false, 500) {
		t.Fatal("disabled after 2 failures in a row")
	}

	// Failures: 0 never disables.
	rule = domain.AutoDisable{}
	for range 50 {
		f.clock = f.clock.Add(time.Hour)
		if outcome(w.WebhookId, false, true, false, 500) {
			t.Fatal("disabled under a rule that never trips")
		}
	}
}
