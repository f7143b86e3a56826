package adapters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/app/registrytest"
)

// The registry following WEBHOOKS passes the suites the memory one
// passes. As the dispatcher's Subscriptions, it learns each change from
// the event the repository appends.
func TestRegistryConformsAsSubscriptions(t *testing.T) {
	registrytest.RunSubscriptions(t, func(t *testing.T) (app.Subscriptions, registrytest.Record) {
		ctx, js, r := registryOn(t)
		follow(t, ctx, r)
		return r, func(c registrytest.Change, w *webhooksv1.Webhook) (time.Time, error) {
			return storeWebhookChange(ctx, js, c, w)
		}
	})
}

// As the management side's Registry, the repository puts each change it
// appended inline, and the follower applies it again.
func TestRegistryConforms(t *testing.T) {
	registrytest.Run(t, func(t *testing.T) (app.Registry, registrytest.Store, func(*testing.T)) {
		ctx, js, r := registryOn(t)
		follow(t, ctx, r)
		var mu sync.Mutex
		seen := map[string]bool{}
		store := func(w *webhooksv1.Webhook) (uint64, error) {
			mu.Lock()
			c := registrytest.Updated
			if w.DeletedAtUnix != nil {
				c = registrytest.Deleted
			} else if !seen[w.GetWebhookId()] {
				c = registrytest.Created
			}
			seen[w.GetWebhookId()] = true
			mu.Unlock()
			return appendWebhookChange(ctx, js, c, w)
		}
		settle := func(t *testing.T) {
			t.Helper()
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := r.WaitCurrent(wctx, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		return r, store, settle
	})
}

// WaitCurrent holds an event back until the webhooks stored before it
// are in the registry, and returns at once for one stored before what it
// last learnt.
func TestWaitCurrentWaitsForTheWebhooksStoredBefore(t *testing.T) {
	ctx, js, r := registryOn(t)
	storedAt := createWebhook(ctx, t, js, "ws_a", "whk_1")

	// Not following the stream, the registry cannot catch up: it waits.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := r.WaitCurrent(short, storedAt); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an event after a webhook the registry has not applied: %v, want it held back", err)
	}
	if err := r.Follow(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitCurrent(ctx, storedAt); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Get("ws_a", "whk_1"); !ok {
		t.Fatal("WaitCurrent returned before the webhook stored earlier was applied")
	}
}

// CatchUp waits for every webhook stored before it, as WaitCurrent does
// for an event's, and vouches for no time to later events: its caller's
// clock need not be the stream's (a dispatcher's catching up on a job's
// unknown webhook, in a deployment whose clocks differ).
func TestCatchUpWaitsForTheWebhooksStoredBeforeIt(t *testing.T) {
	ctx, js, r := registryOn(t)
	createWebhook(ctx, t, js, "ws_a", "whk_1")

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := r.CatchUp(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("catching up on a webhook the registry has not applied: %v, want it held back", err)
	}
	if err := r.Follow(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Get("ws_a", "whk_1"); !ok {
		t.Fatal("CatchUp returned before the webhook stored earlier was applied")
	}
	r.freshMu.Lock()
	defer r.freshMu.Unlock()
	if !r.safeUntil.IsZero() {
		t.Fatalf("CatchUp vouched for the events stored until %s", r.safeUntil)
	}
}

// A WEBHOOKS stream restored from an older backup (deleted, made again,
// numbered from 1) is what the registry holds: a webhook the backup
// lacks is no longer delivered to (nobody could delete it: the repository
// reads the stream), and a change after the restore, at a sequence below
// those the registry had, is applied (found by a read-only audit).
func TestARegistryFollowsAWebhooksStreamMadeAnew(t *testing.T) {
	ctx, js, r := registryOn(t)
	follow(t, ctx, r)
	a := &webhooksv1.Webhook{WebhookId: "whk_a", WorkspaceId: "ws_a", Active: true, Url: "https://a.example/1"}
	createWebhook(ctx, t, js, "ws_a", "whk_a")
	for i := 2; i <= 5; i++ { // the registry's sequence of whk_a climbs past what the backup will hold
		a.Url = fmt.Sprintf("https://a.example/%d", i)
		if _, err := storeWebhookChange(ctx, js, registrytest.Updated, a); err != nil {
			t.Fatal(err)
		}
	}
	createWebhook(ctx, t, js, "ws_a", "whk_b")
	if err := r.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}

	// The restore: an older stream holding whk_a's creation alone; then
	// whk_a is disabled, and whk_c made to know when the registry is there.
	testenv.RemakeStream(t, js, events.WebhooksStream, func(ctx context.Context) error {
		return eventstore.EnsureEventStreams(ctx, js, 1, events.WebhooksStream)
	})
	createWebhook(ctx, t, js, "ws_a", "whk_a")
	disabled := &webhooksv1.Webhook{WebhookId: "whk_a", WorkspaceId: "ws_a", Active: false}
	if _, err := storeWebhookChange(ctx, js, registrytest.Disabled, disabled); err != nil {
		t.Fatal(err)
	}
	createWebhook(ctx, t, js, "ws_a", "whk_c")
	testkit.Eventually(t, 60*time.Second, "the new stream's webhook in the registry", func() bool {
		_, ok := r.Get("ws_a", "whk_c")
		return ok
	})
	if _, ok := r.Get("ws_a", "whk_b"); ok {
		t.Error("a webhook the restored stream lacks is still in the registry")
	}
	if w, ok := r.Get("ws_a", "whk_a"); !ok || w.GetActive() {
		t.Errorf("whk_a disabled after the restore: %v (found %v), want it inactive", w, ok)
	}
}

// An answer covers only what was stored before it: an event stored after
// the last answer is held back until the webhooks before it are applied.
// (The conformance suite cannot see this: its follower keeps up.)
func TestWaitCurrentCoversOnlyWhatItsLastAnswerSaw(t *testing.T) {
	ctx, js, r := registryOn(t)
	// Not following: the empty stream is all it has applied.
	if err := r.WaitCurrent(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	storedAt := createWebhook(ctx, t, js, "ws_a", "whk_1")
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := r.WaitCurrent(short, storedAt); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an event after a webhook the registry has not applied, stored after its last answer: %v, want it held back", err)
	}
}

// Events that each need the stream asked share the questions: at most one
// per checkSpacing, however many events come.
func TestWaitCurrentAsksTheStreamAtMostOncePerSpacing(t *testing.T) {
	ctx, js, r := registryOn(t)
	follow(t, ctx, r)
	before := apiRequests(ctx, t, js)
	began := time.Now()
	calls := 0
	for time.Since(began) < 100*time.Millisecond {
		// Each event is stored after the last answer: each needs one.
		if err := r.WaitCurrent(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
		calls++
	}
	asked := apiRequests(ctx, t, js) - before - 1 // the second count is a request too
	if most := uint64(time.Since(began)/checkSpacing) + 1; asked > most || asked == 0 {
		t.Fatalf("%d events asked the stream %d times in %s, want 1 to %d", calls, asked, time.Since(began), most)
	}
}

// registryOn is a fresh WEBHOOKS stream, the test's context and a silent
// registry over the stream, not following it yet.
func registryOn(t *testing.T) (context.Context, jetstream.JetStream, *Registry) {
	t.Helper()
	ctx := t.Context()
	js := testenv.JetStreamAt(t, testenv.StartNATS(t))
	if err := eventstore.EnsureEventStreams(ctx, js, 1, events.WebhooksStream); err != nil {
		t.Fatal(err)
	}
	return ctx, js, NewRegistry(js, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// follow has r replay its stream and follow it until ctx ends.
func follow(t *testing.T, ctx context.Context, r *Registry) {
	t.Helper()
	if err := r.Follow(ctx); err != nil {
		t.Fatal(err)
	}
}

// createWebhook appends a webhook's creation and returns when the stream
// stored it.
func createWebhook(ctx context.Context, t *testing.T, js jetstream.JetStream, ws, id string) time.Time {
	t.Helper()
	storedAt, err := storeWebhookChange(ctx, js, registrytest.Created, &webhooksv1.Webhook{WebhookId: id, WorkspaceId: ws, Active: true})
	if err != nil {
		t.Fatal(err)
	}
	return storedAt
}

// storeWebhookChange appends the event the repository writes for change
// c of a webhook (w: its state after it) and returns when the stream
// stored it.
func storeWebhookChange(ctx context.Context, js jetstream.JetStream, c registrytest.Change, w *webhooksv1.Webhook) (time.Time, error) {
	seq, err := appendWebhookChange(ctx, js, c, w)
	if err != nil {
		return time.Time{}, err
	}
	str, err := js.Stream(ctx, events.WebhooksStream)
	if err != nil {
		return time.Time{}, err
	}
	msg, err := str.GetMsg(ctx, seq)
	if err != nil {
		return time.Time{}, err
	}
	return msg.Time, nil
}

// appendWebhookChange appends the event the repository writes for change
// c of a webhook (w: its state after it) and returns its sequence.
func appendWebhookChange(ctx context.Context, js jetstream.JetStream, c registrytest.Change, w *webhooksv1.Webhook) (uint64, error) {
	ws := w.GetWorkspaceId()
	subject, err := events.WebhookSubject(ws, w.GetWebhookId())
	if err != nil {
		return 0, err
	}
	meta := esproto.Meta(ctx, ws, "", time.Now())
	var ev proto.Message
	switch c {
	case registrytest.Created:
		ev = &webhooksv1.WebhookCreated{Meta: meta, Webhook: w}
	case registrytest.Updated:
		ev = &webhooksv1.WebhookUpdated{Meta: meta, Webhook: w}
	case registrytest.Disabled:
		ev = &webhooksv1.WebhookDisabled{Meta: meta, Webhook: w, ResponseCode: w.GetLastFailureCode()}
	case registrytest.Deleted:
		ev = &webhooksv1.WebhookDeleted{Meta: meta, Webhook: w}
	default:
		return 0, fmt.Errorf("no webhook event for change %d", c)
	}
	res, err := esproto.Append(ctx, eventstore.New(js, events.WebhooksStream), subject, eventstore.AnySeq, meta, ev)
	return res.Seq, err
}

// apiRequests is how many JetStream API requests the account has made.
func apiRequests(ctx context.Context, t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	info, err := js.AccountInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.API.Total
}
