package app_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/memlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// The webhook management rules, on the in-memory event log, registry and
// attempt log: no NATS, no store.

// received is what the receiver of the fixture's webhooks was sent.
type received struct {
	header http.Header
	body   []byte
}

type fixture struct {
	app      *app.App
	attempts *memory.AttemptLog
	queue    *memory.Queue
	// the receiver at hookURL answers status and keeps what it was sent;
	// the operator allowed no host
	status   int
	received []received
	clock    time.Time
	caller   principal.Principal
}

// hookURL is where the fixture's webhooks deliver.
const hookURL = "https://hooks.example.com/qa"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	f := &fixture{
		attempts: memory.NewAttemptLog(), queue: memory.NewQueue(), status: 200,
		clock: time.Unix(1_800_000_000, 0), caller: principal.Principal{WorkspaceID: "ws_a", UserID: "user_1", Permissions: []string{principal.PermissionAll}},
	}
	sender := memory.NewSender()
	sender.Listen(hookURL, func(h http.Header, body []byte) memory.EndpointAnswer {
		f.received = append(f.received, received{header: h, body: body})
		return memory.EndpointAnswer{Status: f.status}
	})
	f.app = app.New(memlog.New(), app.Ports{
		Registry: memory.NewRegistry(), Attempts: f.attempts, Backlog: memory.NewBacklog(f.queue),
		Queue: f.queue, Sender: sender, Sealer: testkit.Sealer(t),
	}, []byte("relay-key"), log, func() time.Time { return f.clock })
	f.app.Cursors = cursor.NewCodec([]byte("cursor-key"))
	return f
}

var wantKind = testkit.WantKind

func ptr[T any](v T) *T { return &v }

func (f *fixture) create(t *testing.T, key string) (*webhooksv1.Webhook, string) {
	t.Helper()
	w, secret, err := f.app.Create(context.Background(), principal.Caller{Principal: f.caller, CommandID: key}, domain.Input{URL: ptr(hookURL), Events: []string{"ticket_created"}})
	if err != nil {
		t.Fatal(err)
	}
	return w, secret
}

func TestWebhookManagement(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	w, secret := f.create(t, "")
	if secret == "" || strings.Contains(string(w.SecretSealed), secret) || !w.Active || !strings.HasPrefix(secret, strings.TrimSuffix(w.SecretHint, "…")) || len(w.SecretHint) >= len(secret) {
		t.Fatalf("created: %+v, secret %q", w, secret)
	}
	if got, err := f.app.Get("ws_a", w.WebhookId); err != nil || got.GetUrl() != "https://hooks.example.com/qa" {
		t.Fatalf("read its own write: %v %v", got, err)
	}
	_, _, err := f.app.Create(ctx, principal.Caller{Principal: f.caller}, domain.Input{URL: ptr("http://hooks.example.com/qa"), Events: []string{"ticket_created"}})
	wantKind(t, err, apperr.Invalid, "a plain-http url")
	_, _, err = f.app.Create(ctx, principal.Caller{Principal: f.caller}, domain.Input{URL: ptr("https://127.0.0.1/qa"), Events: []string{"ticket_created"}})
	wantKind(t, err, apperr.Invalid, "a url the outbound guard refuses")

	f.clock = f.clock.Add(time.Minute)
	upd, err := f.app.Update(ctx, principal.Caller{Principal: f.caller, CommandID: "put-1"}, w.WebhookId, domain.Input{Events: []string{"ticket_created", "ticket_updated"}})
	if err != nil || !slices.Equal(upd.Events, []string{"ticket_created", "ticket_updated"}) || upd.Url != w.Url || upd.UpdatedAtUnix != f.clock.Unix() {
		t.Fatalf("update: %+v %v", upd, err)
	}
	replay, err := f.app.Update(ctx, principal.Caller{Principal: f.caller, CommandID: "put-1"}, w.WebhookId, domain.Input{Events: []string{"call_started"}})
	if err != nil || !slices.Equal(replay.Events, upd.Events) {
		t.Fatalf("a replayed update applied its own body: %v %v", replay.GetEvents(), err)
	}
	other := f.caller
	other.WorkspaceID = "ws_b"
	_, err = f.app.Update(ctx, principal.Caller{Principal: other}, w.WebhookId, domain.Input{Events: []string{"call_started"}})
	wantKind(t, err, apperr.NotFound, "another workspace's webhook")

	if err := f.app.Delete(ctx, principal.Caller{Principal: f.caller, CommandID: "del-1"}, w.WebhookId); err != nil {
		t.Fatal(err)
	}
	if err := f.app.Delete(ctx, principal.Caller{Principal: f.caller, CommandID: "del-1"}, w.WebhookId); err != nil {
		t.Fatalf("a replayed delete answers as the first did: %v", err)
	}
	_, err = f.app.Get("ws_a", w.WebhookId)
	wantKind(t, err, apperr.NotFound, "a deleted webhook")
	if len(f.app.List("ws_a")) != 0 {
		t.Fatal("a deleted webhook is still listed")
	}
}

// A retried keyed create answers the first webhook and its secret.
func TestRetriedCreateAnswersTheFirstSecret(t *testing.T) {
	f := newFixture(t)
	w1, s1 := f.create(t, "key-1")
	w2, s2 := f.create(t, "key-1")
	if w1.WebhookId != w2.WebhookId || s1 != s2 || len(f.app.List("ws_a")) != 1 {
		t.Fatalf("retry: %s/%s vs %s/%s, %d listed", w1.WebhookId, s1, w2.WebhookId, s2, len(f.app.List("ws_a")))
	}
}

// A workspace holds at most MaxPerWorkspace webhooks: the next create is
// a 409 and stores nothing, a keyed retry of one that was made is still
// answered, another workspace is not counted, and a delete makes room.
func TestWebhooksPerWorkspaceAreBounded(t *testing.T) {
	f := newFixture(t)
	f.app.MaxPerWorkspace = 3
	first, firstSecret := f.create(t, "key-1")
	f.create(t, "")
	f.create(t, "")
	_, _, err := f.app.Create(context.Background(), principal.Caller{Principal: f.caller}, domain.Input{URL: ptr(hookURL), Events: []string{"ticket_created"}})
	wantKind(t, err, apperr.Conflict, "a fourth webhook")
	if got := len(f.app.List("ws_a")); got != 3 {
		t.Fatalf("%d webhooks after a refused create, want 3", got)
	}
	if again, secret := f.create(t, "key-1"); again.WebhookId != first.WebhookId || secret != firstSecret {
		t.Fatalf("the keyed retry of a create that was made: %s, want %s", again.WebhookId, first.WebhookId)
	}
	other := f.caller
	other.WorkspaceID = "ws_b"
	if _, _, err := f.app.Create(context.Background(), principal.Caller{Principal: other}, domain.Input{URL: ptr(hookURL), Events: []string{"ticket_created"}}); err != nil {
		t.Fatalf("another workspace's first webhook: %v", err)
	}
	if err := f.app.Delete(context.Background(), principal.Caller{Principal: f.caller}, first.WebhookId); err != nil {
		t.Fatal(err)
	}
	f.create(t, "")
}

// The listing pages its workspace's webhooks oldest first: every page
// after the cursor of the one before, each webhook once, the total on
// each; a cursor of another workspace, or forged, is the one refusal.
func TestWebhooksArePagedOldestFirst(t *testing.T) {
	f := newFixture(t)
	for i := range 5 {
		f.create(t, "")
		f.clock = f.clock.Add(time.Duration(i%2) * time.Millisecond) // some made in one millisecond: their ids order them
	}
	var listed []string
	for _, w := range f.app.List("ws_a") {
		listed = append(listed, w.WebhookId)
	}
	var got []string
	token := ""
	for pages := 1; ; pages++ {
		page, err := f.app.ListPage("ws_a", 2, token)
		if err != nil || page.Total != 5 || len(page.Webhooks) > 2 || page.HasMore != (page.NextCursor != nil) {
			t.Fatalf("page %d: %+v %v", pages, page, err)
		}
		for _, w := range page.Webhooks {
			got = append(got, w.WebhookId)
		}
		if !page.HasMore {
			if pages != 3 {
				t.Fatalf("%d pages of 2 for 5 webhooks", pages)
			}
			break
		}
		token = *page.NextCursor
	}
	if !slices.Equal(got, listed) || len(got) != 5 {
		t.Fatalf("paged %v, listed %v", got, listed)
	}
	first, _ := f.app.ListPage("ws_a", 2, "")
	_, err := f.app.ListPage("ws_b", 2, *first.NextCursor)
	wantKind(t, err, apperr.Invalid, "another workspace's cursor")
	_, err = f.app.ListPage("ws_a", 2, "forged")
	wantKind(t, err, apperr.Invalid, "a forged cursor")
}

// A receiver that answers 410 Gone disables its webhook, with the reason;
// re-activating it clears the reason.
func TestGoneDisablesAndReactivationClears(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	w, _ := f.create(t, "")
	if err := app.DisableGone(ctx, f.app.Webhooks, w, 410, f.clock); err != nil {
		t.Fatal(err)
	}
	got, _ := f.app.Get("ws_a", w.WebhookId)
	if got.Active || got.DisabledReason != "gone" || got.GetDisabledAtUnix() != f.clock.Unix() || got.LastFailureCode != 410 || got.LastFailureAtUnixMs != f.clock.UnixMilli() {
		t.Fatalf("disabled: %+v", got)
	}
	if err := app.DisableGone(ctx, f.app.Webhooks, got, 410, f.clock.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if again, _ := f.app.Get("ws_a", w.WebhookId); again.GetDisabledAtUnix() != f.clock.Unix() {
		t.Fatalf("disabling a disabled webhook changed it: %+v", again)
	}
	back, err := f.app.Update(ctx, principal.Caller{Principal: f.caller}, w.WebhookId, domain.Input{Active: ptr(true)})
	if err != nil || !back.Active || back.DisabledReason != "" || back.DisabledAtUnix != nil {
		t.Fatalf("re-activated: %+v %v", back, err)
	}
}

// Health is each webhook's recent outcome and its backlog; test
// deliveries stay out of it.
func TestHealth(t *testing.T) {
	f := newFixture(t)
	w, _ := f.create(t, "")
	for i := range 3 {
		job := &webhooksv1.DeliveryJob{WorkspaceId: "ws_a", WebhookId: w.WebhookId, EventId: "evt_waiting_" + strconv.Itoa(i)}
		if err := f.queue.QueueDelivery(context.Background(), app.Queued{Job: job}); err != nil {
			t.Fatal(err)
		}
	}
	at := f.clock.UnixMilli()
	for i, ok := range []bool{true, false, false} {
		f.attempts.Add(&webhooksv1.DeliveryAttempt{AttemptId: "a" + string(rune('0'+i)), EventId: "evt_" + string(rune('0'+i)), WebhookId: w.WebhookId,
			WorkspaceId: "ws_a", AtUnixMs: at + int64(i), Success: ok, ResponseCode: map[bool]int32{true: 200, false: 500}[ok], Final: true})
	}
	f.attempts.Add(&webhooksv1.DeliveryAttempt{AttemptId: "t", EventId: "evt_t", WebhookId: w.WebhookId, WorkspaceId: "ws_a", AtUnixMs: at + 9, Test: true, ResponseCode: 500})
	rows, err := f.app.Health(context.Background(), "ws_a")
	if err != nil || len(rows) != 1 {
		t.Fatalf("health: %v %v", rows, err)
	}
	h := rows[0].Health
	if rows[0].Backlog != 3 || h.Attempts != 3 || h.ConsecutiveFailures != 2 || h.LastSuccessUnixMs != at || h.LastResponseCode != 500 {
		t.Fatalf("health: %+v backlog %d", h, rows[0].Backlog)
	}
}
