package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// The delivery rules (test deliveries, the log, resends, ingestion and
// the relay) on the same in-memory ports.

// delivered is attempt retry+1 of delivering eventID to w at atMs.
func delivered(w *webhooksv1.Webhook, eventID string, retry int32, atMs int64, ok, final bool) *webhooksv1.DeliveryAttempt {
	a := &webhooksv1.DeliveryAttempt{
		AttemptId: eventID + ":" + w.GetWebhookId() + ":" + strconv.Itoa(int(retry)+1), EventId: eventID, WorkspaceId: w.GetWorkspaceId(),
		WebhookId: w.GetWebhookId(), Event: "ticket_created", AtUnixMs: atMs, Success: ok, RetryCount: retry, Final: final,
	}
	if retry == 0 {
		a.RequestBody = []byte(`{"event":"ticket_created","id":"` + eventID + `"}`)
	}
	return a
}

// A test delivery is signed with the current secret (a rotated one once
// rotated), recorded as a final test attempt, and left out of health.
func TestTestDeliveryAfterSecretRotation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	w, first := f.create(t, "")
	rotated, err := f.app.Update(ctx, principal.Caller{Principal: f.caller}, w.WebhookId, domain.Input{Secret: ptr("whsec_rotated_secret_value_0123456789")})
	if err != nil || rotated.SecretHint == w.SecretHint || slices.Equal(rotated.SecretSealed, w.SecretSealed) {
		t.Fatalf("rotated: %+v %v", rotated, err)
	}
	f.status = 503
	att, err := f.app.Test(ctx, principal.Caller{Principal: f.caller}, w.WebhookId, "call_ended")
	if err != nil {
		t.Fatal(err)
	}
	sent := f.received[0]
	signature := sent.header.Get(delivery.HeaderSignature)
	if domain.Verify([]byte(first), sent.body, signature) || !domain.Verify([]byte("whsec_rotated_secret_value_0123456789"), sent.body, signature) {
		t.Fatalf("the test delivery is not signed with the rotated secret alone: %q", signature)
	}
	if sent.header.Get(delivery.HeaderEvent) != "call_ended" || sent.header.Get(delivery.HeaderAttempt) != "1" {
		t.Fatalf("sent headers: %v", sent.header)
	}
	var env wire.Envelope
	if err := json.Unmarshal(sent.body, &env); err != nil || env.Event != "call_ended" || env.Timestamp != wire.FormatTimestamp(f.clock) {
		t.Fatalf("body %s: %v", sent.body, err)
	}
	if !att.Test || !att.Final || att.Success || att.ResponseCode != 503 || att.AtUnixMs != f.clock.UnixMilli() || att.EventId != sent.header.Get(delivery.HeaderEventID) {
		t.Fatalf("attempt: %+v", att)
	}
	logs, err := f.app.Logs(ctx, "ws_a", w.WebhookId, domain.LogFilter{}, app.DefaultLogLimit, "")
	if err != nil || len(logs.Attempts) != 1 || logs.Attempts[0].AttemptId != att.AttemptId || logs.HasMore {
		t.Fatalf("logs: %+v %v", logs, err)
	}
	if rows, _ := f.app.Health(ctx, "ws_a"); rows[0].Health.Attempts != 0 {
		t.Fatalf("a test counted in health: %+v", rows[0].Health)
	}
	_, err = f.app.Test(ctx, principal.Caller{Principal: f.caller}, "whk_missing", "call_ended")
	wantKind(t, err, apperr.NotFound, "a test of an unknown webhook")
}

// An attempt memory let go of is listed from the durable history though
// memory still holds others of the same millisecond, and each once.
func TestLogsReachIntoHistoryWithinAMillisecond(t *testing.T) {
	f := newFixture(t)
	w, _ := f.create(t, "")
	at := f.clock.UnixMilli()
	evicted, kept, newest := delivered(w, "evt_1", 0, at, true, true), delivered(w, "evt_2", 0, at, true, true), delivered(w, "evt_3", 0, at+1, true, true)
	f.attempts.Add(kept)
	f.attempts.Add(newest)
	f.app.History = memory.NewHistory(evicted, kept, newest)
	for limit, want := range map[int][]string{3: {"evt_3", "evt_2", "evt_1"}, 10: {"evt_3", "evt_2", "evt_1"}, 2: {"evt_3", "evt_2"}} {
		if got, err := eventIDs(f.app.Logs(context.Background(), "ws_a", w.WebhookId, domain.LogFilter{}, limit, "")); err != nil || !slices.Equal(got, want) {
			t.Errorf("limit %d: %v %v; want %v", limit, got, err, want)
		}
	}
}

// deliveredMany is n first attempts of events evt_000…, perMs a
// millisecond from atMs, ok(i) saying which succeeded.
func deliveredMany(w *webhooksv1.Webhook, n int, atMs int64, perMs int, ok func(i int) bool) []*webhooksv1.DeliveryAttempt {
	out := make([]*webhooksv1.DeliveryAttempt, n)
	for i := range out {
		out[i] = delivered(w, fmt.Sprintf("evt_%03d", i), 0, atMs+int64(i/perMs), ok(i), true)
	}
	return out
}

func eventIDs(page app.LogPage, err error) ([]string, error) {
	var out []string
	for _, a := range page.Attempts {
		out = append(out, a.EventId)
	}
	return out, err
}

// Paging with the cursors reaches every attempt once, newest first, from
// memory and the durable history alike, though many share a millisecond
// (which the log's end_time, in seconds, cannot step between); the last
// page says so. A cursor is a place in its webhook's log only.
func TestLogsPageWithCursors(t *testing.T) {
	f := newFixture(t)
	w, _ := f.create(t, "")
	all := deliveredMany(w, 250, f.clock.UnixMilli(), 50, func(i int) bool { return i%7 != 0 })
	for _, a := range all[200:] {
		f.attempts.Add(a) // memory holds the newest 50
	}
	f.app.History = memory.NewHistory(all[:220]...) // the durable log lags the newest 30
	slices.SortFunc(all, app.NewestFirst)
	for _, c := range []struct {
		f     domain.LogFilter
		limit int
	}{{domain.LogFilter{}, 30}, {domain.LogFilter{}, 100}, {domain.LogFilter{Status: domain.LogFailed}, 7}} {
		var want, got []string
		for _, a := range all {
			if c.f.Matches(a.GetEvent(), a.GetSuccess(), a.GetAtUnixMs()) {
				want = append(want, a.GetAttemptId())
			}
		}
		cursor := ""
		for pages := 0; ; pages++ {
			page, err := f.app.Logs(context.Background(), "ws_a", w.WebhookId, c.f, c.limit, cursor)
			if err != nil || pages > len(all) {
				t.Fatalf("page %d: %v", pages, err)
			}
			for _, a := range page.Attempts {
				got = append(got, a.GetAttemptId())
			}
			if !page.HasMore {
				if page.NextCursor != nil {
					t.Errorf("the last page has a cursor")
				}
				break
			}
			cursor = *page.NextCursor
		}
		if !slices.Equal(got, want) {
			t.Errorf("%+v, %d a page: %d attempts listed, want %d (%v)", c.f, c.limit, len(got), len(want), got)
		}
	}
	first, err := f.app.Logs(context.Background(), "ws_a", w.WebhookId, domain.LogFilter{}, 10, "")
	if err != nil || first.NextCursor == nil {
		t.Fatalf("first page: %+v %v", first, err)
	}
	failed, err := f.app.Logs(context.Background(), "ws_a", w.WebhookId, domain.LogFilter{Status: domain.LogFailed}, 10, *first.NextCursor)
	if err != nil || len(failed.Attempts) == 0 || !app.PositionOf(first.Attempts[9]).Below(failed.Attempts[0]) {
		t.Fatalf("failed attempts below the first page: %+v %v", failed, err)
	}
	other, _ := f.create(t, "")
	_, err = f.app.Logs(context.Background(), "ws_a", other.WebhookId, domain.LogFilter{}, 10, *first.NextCursor)
	wantKind(t, err, apperr.Invalid, "a cursor of another webhook's log")
}

// asking records what the log asks the durable history for.
type asking struct {
	app.DeliveryHistory
	limits []int
}

func (h *asking) Older(ctx context.Context, webhookID string, f domain.LogFilter, before *app.LogPosition, limit int) ([]*webhooksv1.DeliveryAttempt, error) {
	h.limits = append(h.limits, limit)
	return h.DeliveryHistory.Older(ctx, webhookID, f, before, limit)
}

// The durable history is asked only for what memory does not hold: the
// newest page of 100 (the console's, every 2 s) asks it for the attempt
// that says whether more follow, and for memory's oldest millisecond
// again (memory may have let go of others of it), not for the 100 memory
// listed.
func TestLogsAskTheHistoryForWhatMemoryLacks(t *testing.T) {
	f := newFixture(t)
	w, _ := f.create(t, "")
	all := deliveredMany(w, 300, f.clock.UnixMilli(), 1, func(int) bool { return true })
	for _, a := range all {
		f.attempts.Add(a) // memory keeps the newest 100
	}
	history := &asking{DeliveryHistory: memory.NewHistory(all...)}
	f.app.History = history
	page, err := f.app.Logs(context.Background(), "ws_a", w.WebhookId, domain.LogFilter{}, 100, "")
	if err != nil || len(page.Attempts) != 100 || !page.HasMore || page.Attempts[99].EventId != "evt_200" {
		t.Fatalf("the newest page: %d attempts, more %v, %v", len(page.Attempts), page.HasMore, err)
	}
	if !slices.Equal(history.limits, []int{2}) {
		t.Errorf("the durable history was asked for %v attempts; want [2]", history.limits)
	}
}

// The log serves memory first, then the durable history older than the
// oldest attempt memory holds.
func TestLogsReachIntoHistory(t *testing.T) {
	f := newFixture(t)
	w, _ := f.create(t, "")
	at := f.clock.UnixMilli()
	f.attempts.Add(delivered(w, "evt_3", 0, at+3, true, true))
	f.attempts.Add(delivered(w, "evt_2", 0, at+2, false, true))
	f.app.History = memory.NewHistory(delivered(w, "evt_3", 0, at+3, true, true), delivered(w, "evt_2", 0, at+2, false, true), delivered(w, "evt_1", 0, at+1, false, true))
	if got, err := eventIDs(f.app.Logs(context.Background(), "ws_a", w.WebhookId, domain.LogFilter{}, 10, "")); err != nil || !slices.Equal(got, []string{"evt_3", "evt_2", "evt_1"}) {
		t.Fatalf("logs: %v %v", got, err)
	}
	if got, _ := eventIDs(f.app.Logs(context.Background(), "ws_a", w.WebhookId, domain.LogFilter{Status: domain.LogFailed}, 1, "")); !slices.Equal(got, []string{"evt_2"}) {
		t.Fatalf("one failed: %v", got)
	}
}

// A resend queues the first attempt's body again as a new delivery; the
// same command key queues it once; tests, unknown deliveries and
// inactive webhooks are refused.
func TestResend(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	w, _ := f.create(t, "")
	first := delivered(w, "evt_1", 0, f.clock.UnixMilli(), false, false)
	f.attempts.Add(first)
	f.attempts.Add(delivered(w, "evt_1", 1, f.clock.UnixMilli()+1, false, true))
	r1, err := f.app.Resend(ctx, principal.Caller{Principal: f.caller, CommandID: "key-1"}, w.WebhookId, app.DeliveryID(first))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := f.app.Resend(ctx, principal.Caller{Principal: f.caller, CommandID: "key-1"}, w.WebhookId, app.DeliveryID(first))
	if err != nil || r2 != r1 || r1.EventID != "evt_1" || r1.DeliveryID == app.DeliveryID(first) {
		t.Fatalf("resent %+v then %+v (%v)", r1, r2, err)
	}
	jobs := f.queue.Jobs()
	if len(jobs) != 1 || jobs[0].EventId != "evt_1" || string(jobs[0].Body) != string(first.RequestBody) || jobs[0].ResendId == "" || jobs[0].PublishedAtUnixMs != f.clock.UnixMilli() {
		t.Fatalf("jobs: %v", jobs)
	}
	if _, err := f.app.Resend(ctx, principal.Caller{Principal: f.caller, CommandID: "key-2"}, w.WebhookId, app.DeliveryID(first)); err != nil || len(f.queue.Jobs()) != 2 {
		t.Fatalf("another key queues another delivery: %v, %d jobs", err, len(f.queue.Jobs()))
	}

	_, err = f.app.Resend(ctx, principal.Caller{Principal: f.caller}, w.WebhookId, "dlv_missing")
	wantKind(t, err, apperr.NotFound, "an unknown delivery")
	test, err := f.app.Test(ctx, principal.Caller{Principal: f.caller}, w.WebhookId, "call_ended")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.app.Resend(ctx, principal.Caller{Principal: f.caller}, w.WebhookId, app.DeliveryID(test))
	wantKind(t, err, apperr.NotFound, "a test delivery")
	if err := app.DisableGone(ctx, f.app.Webhooks, w, 410, f.clock); err != nil {
		t.Fatal(err)
	}
	_, err = f.app.Resend(ctx, principal.Caller{Principal: f.caller, CommandID: "key-3"}, w.WebhookId, app.DeliveryID(first))
	if !errors.Is(err, apperr.WebhookInactive) {
		t.Fatalf("resend to a disabled webhook: %v", err)
	}
}

// Recover resends each event whose delivery failed for good and that no
// delivery delivered (a resend, before or after the failure), once, from
// the durable history too.
func TestRecover(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	w, _ := f.create(t, "")
	at := f.clock.UnixMilli()
	resent := delivered(w, "evt_1", 0, at+5, true, true) // a resend of evt_1 delivered it
	resent.AttemptId, resent.ResendId = "evt_1:"+w.WebhookId+":rsd_1:1", "rsd_1"
	// evt_5 was resent and delivered while its first delivery went on
	// retrying, then failed for good: the receiver has it all the same.
	resent5 := delivered(w, "evt_5", 0, at+7, true, true)
	resent5.AttemptId, resent5.ResendId = "evt_5:"+w.WebhookId+":rsd_5:1", "rsd_5"
	f.app.History = memory.NewHistory(
		delivered(w, "evt_5", 2, at+9, false, true),
		resent5,
		delivered(w, "evt_5", 0, at+2, false, false),
		delivered(w, "evt_4", 0, at+6, false, false), // still being retried
		resent,
		delivered(w, "evt_3", 0, at+4, false, true),    // failed for good
		delivered(w, "evt_2", 0, at+3, true, true),     // delivered
		delivered(w, "evt_1", 0, at+1, false, true),    // failed, then resent and delivered
		delivered(w, "evt_0", 0, at-1000, false, true), // before the range
	)
	out, more, err := f.app.Recover(ctx, principal.Caller{Principal: f.caller}, w.WebhookId, domain.LogFilter{FromMs: at})
	if err != nil || more || len(out) != 1 || out[0].EventID != "evt_3" {
		t.Fatalf("recovered %+v more %v: %v", out, more, err)
	}
	if jobs := f.queue.Jobs(); len(jobs) != 1 || jobs[0].EventId != "evt_3" {
		t.Fatalf("jobs: %v", jobs)
	}
}

// An ingested event goes to the queue once per idempotency key, with
// its envelope; one that makes no subject is refused.
func TestIngest(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	in := domain.IngestInput{Event: "call_ended", Data: json.RawMessage(`{ "call_id": "c1" }`)}
	id1, err := f.app.Ingest(ctx, principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a"}, CommandID: "key-1"}, in)
	if err != nil {
		t.Fatal(err)
	}
	id2, err := f.app.Ingest(ctx, principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a"}, CommandID: "key-1"}, in)
	if err != nil || id2 != id1 {
		t.Fatalf("retried ingest: %s vs %s (%v)", id2, id1, err)
	}
	if id3, _ := f.app.Ingest(ctx, principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_b"}, CommandID: "key-1"}, in); id3 == id1 {
		t.Fatal("the same key in another workspace answered the same id")
	}
	evs := f.queue.Events()
	if len(evs) != 2 || evs[0].ID != id1 || evs[0].WorkspaceID != "ws_a" || evs[0].Event != "call_ended" {
		t.Fatalf("queued: %+v", evs)
	}
	var env wire.Envelope
	if err := json.Unmarshal(evs[0].Body, &env); err != nil || string(env.Data) != `{"call_id":"c1"}` || env.Timestamp != wire.FormatTimestamp(f.clock) {
		t.Fatalf("envelope %s: %v", evs[0].Body, err)
	}
	_, err = f.app.Ingest(ctx, principal.In("ws.a"), in)
	wantKind(t, err, apperr.NotFound, "a workspace id that makes no subject")

	// The key sent with another event is refused, as every keyed write's
	// is: its answer would name an event never stored.
	keyed := principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a"}, CommandID: "key-2"}
	if _, err := f.app.Ingest(esproto.WithRequestDigest(ctx, "first"), keyed, in); err != nil {
		t.Fatal(err)
	}
	other := domain.IngestInput{Event: "call_ended", Data: json.RawMessage(`{ "call_id": "c2" }`)}
	_, err = f.app.Ingest(esproto.WithRequestDigest(ctx, "second"), keyed, other)
	if v, ok := err.(apperr.ValidationErrors); !ok || v[0].Type != "idempotency_key_reused" {
		t.Fatalf("the key with another event: %v, want 422 idempotency_key_reused", err)
	}
}

// A conversation_ended's transcript is published sealed under its
// conversation's key, never in the clear; once the key is shredded a
// transcript handed over again is not published at all.
func TestIngestSealsTranscripts(t *testing.T) {
	f := newFixture(t)
	keys := convseal.NewMemoryKeys()
	f.app.TranscriptKeys = keys
	ctx := t.Context()
	in := domain.IngestInput{Event: "conversation_ended", Data: json.RawMessage(
		`{"conversation_id":"conv_1","agent_id":"agent_1","transcript":[{"role":"user","message":"my secret address"}]}`)}
	caller := principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a"}}
	if _, err := f.app.Ingest(ctx, caller, in); err != nil {
		t.Fatal(err)
	}
	evs := f.queue.Events()
	if len(evs) != 1 || strings.Contains(string(evs[0].Body), "secret address") {
		t.Fatalf("published: %s", evs[0].Body)
	}
	var env wire.Envelope
	var data struct {
		Sealed string `json:"transcript_sealed"`
		Turns  int    `json:"transcript_turns"`
	}
	if err := json.Unmarshal(evs[0].Body, &env); err != nil || json.Unmarshal(env.Data, &data) != nil || data.Turns != 1 {
		t.Fatalf("envelope %s", evs[0].Body)
	}
	got, err := convseal.OpenTranscript(ctx, keys, "ws_a", "conv_1", data.Sealed)
	if err != nil || !strings.Contains(string(got), "secret address") {
		t.Fatalf("opened %s, %v", got, err)
	}

	if err := keys.Shred(ctx, "ws_a", "conv_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.app.Ingest(ctx, caller, in); err != nil {
		t.Fatal(err)
	}
	if evs = f.queue.Events(); len(evs) != 2 || strings.Contains(string(evs[1].Body), "transcript") {
		t.Fatalf("after the shred, published: %s", evs[1].Body)
	}
}

// relayPoll is a relay poll's outcome.
type relayPoll struct {
	d   *app.RelayDelivery
	err error
}

// pollRelay starts a client's poll of relay webhook id, waiting up to
// wait, and returns once the poll waits on rl.
func (f *fixture) pollRelay(t *testing.T, rl *memory.Relay, id string, wait time.Duration) <-chan relayPoll {
	t.Helper()
	polled := make(chan relayPoll, 1)
	go func() {
		d, err := f.app.RelayNext(context.Background(), principal.Caller{Principal: f.caller}, id, wait)
		polled <- relayPoll{d, err}
	}()
	testkit.Eventually(t, 5*time.Second, "the client polls", func() bool { return rl.Polling("ws_a", id) == 1 })
	return polled
}

// A relay poll hands out a token only that webhook's result can use, and
// the result reaches the reply it was handed out for.
func TestRelayTokens(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rl := memory.NewRelay()
	f.app.Relay = rl
	plain, _ := f.create(t, "")
	_, err := f.app.RelayNext(ctx, principal.Caller{Principal: f.caller}, plain.WebhookId, 0)
	if !errors.Is(err, apperr.NotARelayWebhook) {
		t.Fatalf("polling a webhook that is not a relay: %v", err)
	}
	w, _, err := f.app.Create(ctx, principal.Caller{Principal: f.caller}, domain.Input{Relay: ptr(true), Events: []string{"call_ended"}})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := f.app.Create(ctx, principal.Caller{Principal: f.caller}, domain.Input{Relay: ptr(true), Events: []string{"call_ended"}})
	if err != nil {
		t.Fatal(err)
	}
	// The client polls; a delivery to its webhook goes to the poll and
	// waits for the client's answer.
	polled := f.pollRelay(t, rl, w.WebhookId, 5*time.Second)
	sent := make(chan delivery.Result, 1)
	go func() {
		sent <- rl.Send(ctx, "ws_a", delivery.Request{WebhookID: w.WebhookId, EventID: "evt_1", Event: "call_ended", Body: []byte("{}"), Secret: []byte("whsec_x")})
	}()
	got := <-polled
	d := got.d
	if got.err != nil || d == nil || d.Headers[delivery.HeaderEvent] != "call_ended" || d.Token == "" {
		t.Fatalf("poll: %+v %v", d, got.err)
	}
	if none, err := f.app.RelayNext(ctx, principal.Caller{Principal: f.caller}, w.WebhookId, 0); none != nil || err != nil {
		t.Fatalf("a poll with nothing waiting: %+v %v", none, err)
	}
	err = f.app.RelayResult(ctx, principal.Caller{Principal: f.caller}, other.WebhookId, d.Token, 200, nil, "")
	wantKind(t, err, apperr.Invalid, "another webhook's token")
	if err := f.app.RelayResult(ctx, principal.Caller{Principal: f.caller}, w.WebhookId, d.Token, 0, nil, "connection refused"); err != nil {
		t.Fatal(err)
	}
	if res := <-sent; !res.Outcome.NetworkErr || !strings.Contains(res.Error, "connection refused") {
		t.Fatalf("the relayed attempt's result: %+v", res)
	}
}

// A poll waiting for a relay delivery answers none as soon as the
// process begins to stop, not at the end of its wait: a stop (SIGTERM of
// a replica in a rolling update) must not wait out every open poll.
func TestARelayPollEndsWhenTheProcessStops(t *testing.T) {
	f := newFixture(t)
	rl := memory.NewRelay()
	f.app.Relay = rl
	stopping, stop := context.WithCancel(context.Background())
	defer stop()
	f.app.Stopping = stopping
	w, _, err := f.app.Create(context.Background(), principal.Caller{Principal: f.caller}, domain.Input{Relay: ptr(true), Events: []string{"call_ended"}})
	if err != nil {
		t.Fatal(err)
	}
	polled := f.pollRelay(t, rl, w.WebhookId, app.MaxRelayWait)
	stop()
	select {
	case got := <-polled:
		if got.d != nil || got.err != nil {
			t.Fatalf("the poll ended with %+v %v, want no delivery and no error", got.d, got.err)
		}
	case <-time.After(app.MaxRelayWait / 2):
		t.Fatal("the poll waited on after the process began to stop")
	}
}
