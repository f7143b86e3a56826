package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// The dispatcher's rules, fan-out and delivery, on the in-memory
// registry, queue and attempt log: which webhooks get which event, and
// what becomes of each attempt. No NATS: package dispatcher only drives
// these from the streams.

// receiver is the Sender port as a script: each attempt gets the next of
// its answers (the last one over and over), and the headers it was sent
// are kept. A script, not memory.Sender, because the retry rules are
// tested on outcomes no receiver over HTTP states so exactly (a Retry-After
// of 40 ms); memory.Sender passes the Sender suite for the rest.
type receiver struct {
	mu      sync.Mutex
	answers []delivery.Result
	got     []delivery.Request
	headers []map[string]string
}

func answering(codes ...int) *receiver {
	r := &receiver{}
	for _, c := range codes {
		res := delivery.Result{Outcome: domain.Outcome{StatusCode: c}, Duration: 3 * time.Millisecond}
		if c >= 300 {
			res.Error = "HTTP " + strconv.Itoa(c)
		}
		r.answers = append(r.answers, res)
	}
	return r
}

func (r *receiver) Send(_ context.Context, _ *webhooksv1.Webhook, req delivery.Request) delivery.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, req)
	h := map[string]string{}
	for k := range delivery.Headers(req) {
		h[k] = delivery.Headers(req).Get(k)
	}
	r.headers = append(r.headers, h)
	return r.answers[min(len(r.got), len(r.answers))-1]
}

func (r *receiver) HostAllowed(string) bool { return false }

// failingQueue refuses every job.
type failingQueue struct{ app.Queue }

func (failingQueue) QueueDelivery(context.Context, ...app.Queued) error {
	return errors.New("stream unavailable")
}

type dispatchFixture struct {
	*fixture
	reg      *memory.Registry
	dispatch *app.Dispatch
	recv     *receiver
}

func newDispatch(t *testing.T, recv *receiver) *dispatchFixture {
	t.Helper()
	f := newFixture(t)
	reg := f.app.Registry.(*memory.Registry)
	d := &dispatchFixture{fixture: f, reg: reg, recv: recv, dispatch: &app.Dispatch{
		Subscriptions: reg, Queue: f.queue, Attempts: f.attempts, Sender: recv, Sealer: f.app.Sealer, Webhooks: f.app.Webhooks,
		Log: f.app.Log, Now: func() time.Time { return f.clock }, TimeUnit: time.Millisecond,
	}}
	return d
}

// hook creates a webhook of the caller's workspace subscribed to evs.
func (d *dispatchFixture) hook(t *testing.T, ws string, evs []string, retry *domain.RetryConfigInput) *webhooksv1.Webhook {
	t.Helper()
	p := d.caller
	p.WorkspaceID = ws
	w, _, err := d.app.Create(context.Background(), principal.Caller{Principal: p}, domain.Input{
		URL: ptr("https://hooks.example.com/" + ws), Events: evs, RetryConfig: retry, Secret: ptr("whsec_fixture_secret_0123456789abcdef"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (d *dispatchFixture) set(t *testing.T, w *webhooksv1.Webhook, in domain.Input) {
	t.Helper()
	p := d.caller
	p.WorkspaceID = w.WorkspaceId
	if _, err := d.app.Update(context.Background(), principal.Caller{Principal: p}, w.WebhookId, in); err != nil {
		t.Fatal(err)
	}
}

func jobIDs(q *memory.Queue) []string {
	var out []string
	for _, j := range q.Jobs() {
		out = append(out, j.GetEventId()+"→"+j.GetWebhookId())
	}
	return out
}

func event(ws, name, id string, at time.Time, encoded *int) app.FanoutEvent {
	return app.FanoutEvent{WorkspaceID: ws, Name: name, ID: id, StoredAt: at, Body: func() ([]byte, error) {
		*encoded++
		return []byte(`{"event":"` + name + `"}`), nil
	}}
}

func TestFanoutReachesTheSubscribedWebhooksOfTheWorkspace(t *testing.T) {
	d := newDispatch(t, answering(200))
	ctx := context.Background()
	calls := d.hook(t, "ws_a", []string{"call_ended", "call_started"}, nil)
	d.hook(t, "ws_a", []string{"ticket_created"}, nil)       // another event
	d.hook(t, "ws_b", []string{"call_ended"}, nil)           // another workspace
	paused := d.hook(t, "ws_a", []string{"call_ended"}, nil) // deactivated by its user
	d.set(t, paused, domain.Input{Active: ptr(false)})
	failing := d.hook(t, "ws_a", []string{"call_ended"}, nil) // disabled by the dispatcher
	if err := app.DisableGone(ctx, d.app.Webhooks, failing, 410, d.clock); err != nil {
		t.Fatal(err)
	}
	stored := d.clock.Add(time.Second)
	d.clock = d.clock.Add(time.Minute)
	later := d.hook(t, "ws_a", []string{"call_ended"}, nil) // created after the event was stored

	encoded := 0
	e := event("ws_a", "call_ended", "evt_1", stored, &encoded)
	for range 2 { // the second time, a redelivered event
		if h := d.dispatch.Fanout(ctx, e); h.Next != app.Done {
			t.Fatalf("fan-out: %+v", h)
		}
	}
	if got, want := jobIDs(d.queue), []string{"evt_1→" + calls.WebhookId}; !slices.Equal(got, want) {
		t.Fatalf("jobs %v, want %v (not %s, created later)", got, want, later.WebhookId)
	}
	job := d.queue.Jobs()[0]
	if string(job.Body) != `{"event":"call_ended"}` || job.Event != "call_ended" || job.WorkspaceId != "ws_a" || job.PublishedAtUnixMs != stored.UnixMilli() {
		t.Fatalf("job %v", job)
	}
	// The webhook the dispatcher disabled has the event logged as not
	// sent (recover replays it), once; the user's paused one nothing.
	logged := d.attempts.Recent(failing.WebhookId, domain.LogFilter{}, 10)
	if len(logged) != 1 || logged[0].Error != app.NotSentDisabled || !logged[0].Final || logged[0].Success || string(logged[0].RequestBody) != `{"event":"call_ended"}` {
		t.Fatalf("logged for the disabled webhook: %v", logged)
	}
	if n := d.attempts.Recent(paused.WebhookId, domain.LogFilter{}, 10); len(n) != 0 {
		t.Fatalf("logged for the paused webhook: %v", n)
	}

	// An event no webhook wants is not even encoded.
	encoded = 0
	if h := d.dispatch.Fanout(ctx, event("ws_a", "agent_created", "evt_2", stored, &encoded)); h.Next != app.Done || encoded != 0 || len(d.queue.Jobs()) != 1 {
		t.Fatalf("an event nobody wants: %+v, encoded %d times", h, encoded)
	}
}

func TestFanoutRetriesWhatItCouldNotStoreAndDropsWhatItCannotEncode(t *testing.T) {
	d := newDispatch(t, answering(200))
	ctx := context.Background()
	d.hook(t, "ws_a", []string{"call_ended"}, nil)
	at := d.clock.Add(time.Second)
	broken := app.FanoutEvent{WorkspaceID: "ws_a", Name: "call_ended", ID: "evt_1", StoredAt: at, Body: func() ([]byte, error) {
		return nil, errors.New("not encodable")
	}}
	if h := d.dispatch.Fanout(ctx, broken); h.Next != app.Drop {
		t.Fatalf("an event that cannot be encoded: %+v", h)
	}
	d.dispatch.Queue = failingQueue{}
	n := 0
	if h := d.dispatch.Fanout(ctx, event("ws_a", "call_ended", "evt_2", at, &n)); h.Next != app.RetryLater || h.After <= 0 {
		t.Fatalf("jobs not stored: %+v", h)
	}
}

// Events fanned out together have their jobs queued in their order, each
// continuing its own trace; one that cannot be encoded does not hold up
// the others, and when the jobs cannot be stored every event is tried
// again (a job queued before is not queued twice).
func TestFanoutOfSeveralEventsAtOnce(t *testing.T) {
	d := newDispatch(t, answering(200))
	ctx := context.Background()
	first := d.hook(t, "ws_a", []string{"call_ended", "call_started"}, nil)
	second := d.hook(t, "ws_a", []string{"call_ended"}, nil)
	other := d.hook(t, "ws_b", []string{"call_started"}, nil)
	at := d.clock.Add(time.Second)
	n := 0
	traced := func(ws, name, id, tp string) app.FanoutEvent {
		e := event(ws, name, id, at, &n)
		e.Traceparent = tp
		return e
	}
	broken := traced("ws_a", "call_ended", "evt_broken", "")
	broken.Body = func() ([]byte, error) { return nil, errors.New("not encodable") }
	const tp1, tp2 = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-5bf92f3577b34da6a3ce929d0e0e4736-10f067aa0ba902b7-01"
	evs := []app.FanoutEvent{
		traced("ws_a", "call_started", "evt_1", tp1), broken, traced("ws_b", "call_started", "evt_2", tp2), traced("ws_a", "call_ended", "evt_3", ""),
	}
	d.dispatch.Queue = failingQueue{}
	if h := d.dispatch.Fanout(ctx, evs...); h.Next != app.RetryLater {
		t.Fatalf("jobs not stored: %+v", h)
	}
	d.dispatch.Queue = d.queue
	for range 2 { // the second time, a redelivered batch
		if h := d.dispatch.Fanout(ctx, evs...); h.Next != app.Done {
			t.Fatalf("fan-out: %+v", h)
		}
	}
	var got, order []string
	for _, q := range d.queue.Queued() {
		got = append(got, q.Job.EventId+"→"+q.Job.WebhookId+" "+q.Traceparent)
		order = append(order, q.Job.EventId)
	}
	// The events' order; an event's webhooks in any.
	if want := []string{"evt_1", "evt_2", "evt_3", "evt_3"}; !slices.Equal(order, want) {
		t.Fatalf("jobs queued for %v; want %v", order, want)
	}
	want := []string{"evt_1→" + first.WebhookId + " " + tp1, "evt_2→" + other.WebhookId + " " + tp2,
		"evt_3→" + first.WebhookId + " ", "evt_3→" + second.WebhookId + " "}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("queued\n%q\nwant\n%q", got, want)
	}
}

func TestFanoutPlatformEventsAsEnvelopes(t *testing.T) {
	d := newDispatch(t, answering(200))
	ctx := context.Background()
	d.hook(t, "ws_a", []string{"call_ended"}, nil)
	at := d.clock.Add(time.Second)
	s := app.Stored{WorkspaceID: "ws_a", EventID: "evt_1", At: at}
	if _, ok := d.dispatch.PlatformFanout(ctx, "call_ended", []byte(`not json`), s); ok {
		t.Fatal("not an envelope, fanned out")
	}
	if _, ok := d.dispatch.PlatformFanout(ctx, "no_such_event", []byte(`{}`), s); ok {
		t.Fatal("an event nobody may subscribe to, fanned out")
	}
	// Timestamp and data filled in when the producer left them out.
	e, ok := d.dispatch.PlatformFanout(ctx, "call_ended", []byte(`{"event":"other","timestamp":"yesterday","data":[1]}`), s)
	if !ok {
		t.Fatal("a call_ended envelope is not fanned out")
	}
	if h := d.dispatch.Fanout(ctx, e); h.Next != app.Done {
		t.Fatalf("fan-out: %+v", h)
	}
	var env wire.Envelope
	if err := json.Unmarshal(d.queue.Jobs()[0].Body, &env); err != nil {
		t.Fatal(err)
	}
	if env.Event != "call_ended" || env.Timestamp != wire.FormatTimestamp(at) || string(env.Data) != `{}` {
		t.Fatalf("envelope %+v", env)
	}

	// A conversation_ended's sealed transcript and analysis are for the
	// conversation's reader alone: a delivery (queued, logged, resent)
	// carries neither, only the turn count.
	d.hook(t, "ws_a", []string{"conversation_ended"}, nil)
	e, ok = d.dispatch.PlatformFanout(ctx, "conversation_ended", []byte(`{"event":"conversation_ended","data":{"conversation_id":"c1",`+
		`"transcript_sealed":"AAAA","transcript_turns":2,"analysis_sealed":"BBBB"}}`), app.Stored{WorkspaceID: "ws_a", EventID: "evt_2", At: at})
	if !ok {
		t.Fatal("a conversation_ended is not fanned out")
	}
	body, err := e.Body()
	if err != nil || !strings.Contains(string(body), `"transcript_turns":2`) || strings.Contains(string(body), "sealed") {
		t.Fatalf("a conversation_ended's delivery: %s %v", body, err)
	}
}

// Every ticket event reaches webhooks as the public event it is, with
// the API's data for it: the tickets service's own event types say which
// one they amount to (their internal fields stay internal).
func TestTicketEventsArePublicAsTheTicketsServiceSays(t *testing.T) {
	meta := &commonv1.EventMeta{EventId: "evt_1", WorkspaceId: "ws_a"}
	tk := &ticketsv1.Ticket{TicketId: "tkt_1", WorkspaceId: "ws_a", Status: "open", Source: "qa"}
	for _, c := range []struct {
		typ       string
		msg       proto.Message
		name      string
		wantExtra map[string]any
	}{
		{events.TypeTicketCreated, &ticketsv1.TicketCreated{Meta: meta, Ticket: tk}, "ticket_created", map[string]any{}},
		{events.TypeTicketUpdated, &ticketsv1.TicketUpdated{Meta: meta, Ticket: tk, ChangedFields: []string{"title"}}, "ticket_updated",
			map[string]any{"changed_fields": []any{"title"}}},
		{events.TypeTicketCommented, &ticketsv1.TicketCommented{Meta: meta, Ticket: tk}, "ticket_commented", map[string]any{}},
		// A report joining the ticket that raised its priority says so.
		{events.TypeTicketCommented, &ticketsv1.TicketCommented{Meta: meta, Ticket: tk, ChangedFields: []string{"priority"}}, "ticket_commented",
			map[string]any{"changed_fields": []any{"priority"}}},
		{events.TypeTestFailureRecorded, &ticketsv1.TestFailureRecorded{Meta: meta, Ticket: tk, InvocationIds: []string{"inv_2"}, RunIds: []string{"run_3"},
			Public: &ticketsv1.PublicChange{Event: "ticket_commented"}}, "ticket_commented", map[string]any{}},
		{events.TypeTestFailureRecorded, &ticketsv1.TestFailureRecorded{Meta: meta, Ticket: tk, RunIds: []string{"run_4"},
			Public: &ticketsv1.PublicChange{Event: "ticket_updated", ChangedFields: []string{"test_failures"}}},
			"ticket_updated", map[string]any{"changed_fields": []any{"test_failures"}}},
		{events.TypeTestFailureRecorded, &ticketsv1.TestFailureRecorded{Meta: meta, Ticket: tk, InvocationIds: []string{"inv_3"}, RunIds: []string{"run_5"}, Reopened: true,
			Public: &ticketsv1.PublicChange{Event: "ticket_status_changed", PreviousStatus: "resolved"}},
			"ticket_status_changed", map[string]any{"previous_status": "resolved"}},
		{events.TypeTicketClustered, &ticketsv1.TicketClustered{Meta: meta, Ticket: tk, ClusterLabel: "cluster-x", IssueTypeSet: "knowledge_gap",
			Reason: "similar", DecidedBy: "rules", ChangedFields: []string{"issue_type", "labels", "needs_clustering"},
			Public: &ticketsv1.PublicChange{Event: "ticket_updated", ChangedFields: []string{"issue_type", "labels", "needs_clustering"}}},
			"ticket_updated", map[string]any{"changed_fields": []any{"issue_type", "labels", "needs_clustering"}}},
	} {
		name, extra := app.PublicTicketEvent(c.typ, c.msg)
		if name != c.name || !domain.IsTicketEvent(name) {
			t.Fatalf("%s %v: public as %q, want %q", c.typ, c.msg, name, c.name)
		}
		data, err := app.TicketEventData(c.msg, extra)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		ticket, _ := got["ticket"].(map[string]any)
		if ticket["agentqa_ticket_id"] != "tkt_1" {
			t.Fatalf("%s: ticket %v", c.typ, got["ticket"])
		}
		delete(got, "ticket")
		if !reflect.DeepEqual(got, c.wantExtra) {
			t.Fatalf("%s as %s: data beside the ticket %v, want %v", c.typ, name, got, c.wantExtra)
		}
	}
	// An event of the tickets service's own that says nothing public is
	// not delivered.
	if name, _ := app.PublicTicketEvent(events.TypeTestFailureRecorded, &ticketsv1.TestFailureRecorded{Meta: meta, Ticket: tk}); domain.IsTicketEvent(name) {
		t.Fatalf("an unmarked failure is public as %s", name)
	}
}

func TestFanoutTicketUsesTheEventsTimeAndWorkspace(t *testing.T) {
	d := newDispatch(t, answering(200))
	w := d.hook(t, "ws_a", []string{"ticket_status_changed"}, nil)
	occurred := d.clock.Add(-time.Hour)
	msg := &ticketsv1.TestFailureRecorded{Meta: &commonv1.EventMeta{WorkspaceId: "ws_a", OccurredAtUnixMs: occurred.UnixMilli()},
		Ticket: &ticketsv1.Ticket{TicketId: "tkt_1", WorkspaceId: "ws_a"}, Public: &ticketsv1.PublicChange{Event: "ticket_status_changed", PreviousStatus: "resolved"}}
	e, ok := app.TicketFanout(events.TypeTestFailureRecorded, msg, app.Stored{EventID: "evt_9", At: d.clock.Add(time.Second)})
	if !ok {
		t.Fatal("a public ticket event is not fanned out")
	}
	h := d.dispatch.Fanout(context.Background(), e)
	if h.Next != app.Done || len(d.queue.Jobs()) != 1 || d.queue.Jobs()[0].WebhookId != w.WebhookId {
		t.Fatalf("%+v, jobs %v", h, jobIDs(d.queue))
	}
	var env wire.Envelope
	if err := json.Unmarshal(d.queue.Jobs()[0].Body, &env); err != nil || env.Event != "ticket_status_changed" || env.Timestamp != wire.FormatTimestamp(occurred) {
		t.Fatalf("envelope %+v %v", env, err)
	}
}

// A ticket event named by its type alone is decoded only when a webhook
// wants it, and then fanned out as the decoded event would be; one whose
// type carries its public change, or whose workspace the stream did not
// say, is decoded at once.
func TestATicketEventIsDecodedOnlyForAWebhookThatWantsIt(t *testing.T) {
	d := newDispatch(t, answering(200))
	w := d.hook(t, "ws_a", []string{"ticket_created"}, nil)
	meta := &commonv1.EventMeta{WorkspaceId: "ws_a", OccurredAtUnixMs: d.clock.Add(-time.Minute).UnixMilli()}
	tk := &ticketsv1.Ticket{TicketId: "tkt_1", WorkspaceId: "ws_a", Title: "Quoted the wrong refund window"}
	decodes := 0
	decoding := func(msg proto.Message) func() (proto.Message, error) {
		return func() (proto.Message, error) { decodes++; return msg, nil }
	}
	stored := func(ws, id string) app.Stored {
		return app.Stored{WorkspaceID: ws, EventID: id, At: d.clock.Add(time.Second)}
	}

	created := &ticketsv1.TicketCreated{Meta: meta, Ticket: tk}
	updated := &ticketsv1.TicketUpdated{Meta: meta, Ticket: tk, ChangedFields: []string{"title"}}
	for _, c := range []struct {
		typ string
		msg proto.Message
		id  string
	}{{events.TypeTicketCreated, created, "evt_1"}, {events.TypeTicketUpdated, updated, "evt_2"}} {
		before := decodes
		e, ok := app.TicketFanoutOf(c.typ, stored("ws_a", c.id), decoding(c.msg))
		if !ok || e.Name != strings.TrimPrefix(c.typ, "tickets.") || decodes != before {
			t.Fatalf("%s: ok %v name %q, decoded before any webhook matched", c.typ, ok, e.Name)
		}
		if h := d.dispatch.Fanout(context.Background(), e); h.Next != app.Done {
			t.Fatalf("%s: %+v", c.typ, h)
		}
	}
	if decodes != 1 || len(d.queue.Jobs()) != 1 || d.queue.Jobs()[0].WebhookId != w.WebhookId {
		t.Fatalf("decoded %d times (want 1: the created ticket the webhook wants), jobs %v", decodes, jobIDs(d.queue))
	}
	want, _ := app.TicketFanout(events.TypeTicketCreated, created, stored("ws_a", "evt_1"))
	wantBody, err := want.Body()
	if err != nil || string(d.queue.Jobs()[0].Body) != string(wantBody) {
		t.Fatalf("body %s, want the decoded event's %s (%v)", d.queue.Jobs()[0].Body, wantBody, err)
	}

	reopened := &ticketsv1.TestFailureRecorded{Meta: meta, Ticket: tk, Public: &ticketsv1.PublicChange{Event: "ticket_status_changed", PreviousStatus: "resolved"}}
	if e, ok := app.TicketFanoutOf(events.TypeTestFailureRecorded, stored("ws_a", "evt_3"), decoding(reopened)); !ok || e.Name != "ticket_status_changed" || decodes != 2 {
		t.Fatalf("an event carrying its public change: ok %v name %q, decoded %d times", ok, e.Name, decodes)
	}
	if e, ok := app.TicketFanoutOf(events.TypeTicketCreated, stored("", "evt_4"), decoding(created)); !ok || e.WorkspaceID != "ws_a" || decodes != 3 {
		t.Fatalf("an event of no stated workspace: ok %v workspace %q, decoded %d times", ok, e.WorkspaceID, decodes)
	}
	failing := func() (proto.Message, error) { return nil, errors.New("truncated") }
	if _, ok := app.TicketFanoutOf(events.TypeTestFailureRecorded, stored("ws_a", "evt_5"), failing); ok {
		t.Fatal("an event that does not decode is fanned out")
	}
}

// job is a delivery job of event evt_1 for w.
func job(w *webhooksv1.Webhook) *webhooksv1.DeliveryJob {
	return &webhooksv1.DeliveryJob{EventId: "evt_1", WorkspaceId: w.WorkspaceId, WebhookId: w.WebhookId, Event: "call_ended", Body: []byte(`{"event":"call_ended"}`)}
}

func retries(most, delay int64, exponential bool) *domain.RetryConfigInput {
	return &domain.RetryConfigInput{MaxRetries: &most, RetryDelay: &delay, ExponentialBackoff: &exponential, MaxDelay: ptr(int64(300)),
		RetryOnStatus: []int64{500, 503}}
}

func TestDeliveryIsSignedAndRecorded(t *testing.T) {
	d := newDispatch(t, answering(204))
	w := d.hook(t, "ws_a", []string{"call_ended"}, nil)
	h := d.dispatch.Deliver(context.Background(), job(w), 1)
	if h.Next != app.Done || h.Result != app.ResultDelivered || h.Took != 3*time.Millisecond {
		t.Fatalf("%+v", h)
	}
	sent, headers := d.recv.got[0], d.recv.headers[0]
	if sent.URL != w.Url || sent.Attempt != 1 || sent.EventID != "evt_1" {
		t.Fatalf("sent %+v", sent)
	}
	if !testkit.SignedBy([]byte("whsec_fixture_secret_0123456789abcdef"), sent.Body, headers[delivery.HeaderSignature]) ||
		headers[delivery.HeaderEventID] != "evt_1" || headers[delivery.HeaderWebhookID] != w.WebhookId || headers[delivery.HeaderAttempt] != "1" {
		t.Fatalf("headers %v", headers)
	}
	got := d.attempts.Recent(w.WebhookId, domain.LogFilter{}, 10)
	if len(got) != 1 || !got[0].Success || !got[0].Final || got[0].ResponseCode != 204 || got[0].RetryCount != 0 || string(got[0].RequestBody) != `{"event":"call_ended"}` {
		t.Fatalf("recorded %v", got)
	}
}

func TestDeliveryRetriesOnTheWebhooksScheduleThenGivesUp(t *testing.T) {
	d := newDispatch(t, answering(503))
	w := d.hook(t, "ws_a", []string{"call_ended"}, retries(2, 5, false))
	ctx := context.Background()
	for attempt := 1; attempt <= 2; attempt++ {
		h := d.dispatch.Deliver(ctx, job(w), attempt)
		if h.Next != app.RetryLater || h.After != 5*time.Millisecond || h.Result != app.ResultRetry {
			t.Fatalf("attempt %d: %+v; want a retry in 5 retry_config seconds", attempt, h)
		}
	}
	if h := d.dispatch.Deliver(ctx, job(w), 3); h.Next != app.Drop || h.Result != app.ResultFailed {
		t.Fatalf("the last retry: %+v; want given up", h)
	}
	got := d.attempts.Recent(w.WebhookId, domain.LogFilter{}, 10)
	if len(got) != 3 || !got[0].Final || got[1].Final || got[2].Final || got[1].NextAttemptAtUnixMs != d.clock.Add(5*time.Millisecond).UnixMilli() {
		t.Fatalf("recorded, newest first: %v", got)
	}
	if d.recv.headers[2][delivery.HeaderAttempt] != "3" {
		t.Fatalf("the third attempt says %q", d.recv.headers[2][delivery.HeaderAttempt])
	}

	// A status not retried on is given up at once; a receiver's
	// Retry-After beyond the schedule is honoured.
	d.recv.answers = []delivery.Result{{Outcome: domain.Outcome{StatusCode: 400}}}
	if h := d.dispatch.Deliver(ctx, job(w), 1); h.Next != app.Drop || h.Result != app.ResultFailed {
		t.Fatalf("a 400: %+v", h)
	}
	d.recv.got, d.recv.answers = nil, []delivery.Result{{Outcome: domain.Outcome{StatusCode: 503, RetryAfter: 40 * time.Millisecond}}}
	if h := d.dispatch.Deliver(ctx, job(w), 1); h.Next != app.RetryLater || h.After != 40*time.Millisecond {
		t.Fatalf("a 503 with Retry-After: %+v", h)
	}
}

func TestDeliveryToAGoneReceiverDisablesTheWebhook(t *testing.T) {
	d := newDispatch(t, answering(410))
	w := d.hook(t, "ws_a", []string{"call_ended"}, nil)
	if h := d.dispatch.Deliver(context.Background(), job(w), 1); h.Next != app.Drop || h.Result != app.ResultGone {
		t.Fatalf("%+v", h)
	}
	now, ok := d.reg.Get("ws_a", w.WebhookId)
	if !ok || now.Active || now.DisabledReason != domain.DisabledGone || now.LastFailureCode != 410 {
		t.Fatalf("after a 410: %v", now)
	}
	// Its jobs still queued are dropped unsent.
	if h := d.dispatch.Deliver(context.Background(), job(w), 1); h.Next != app.Drop || h.Result != app.ResultDropped || len(d.recv.got) != 1 {
		t.Fatalf("a job of the disabled webhook: %+v, %d sent", h, len(d.recv.got))
	}
}

func TestDeliveryOfADeletedWebhookIsDropped(t *testing.T) {
	d := newDispatch(t, answering(200))
	w := d.hook(t, "ws_a", []string{"call_ended"}, nil)
	if err := d.app.Delete(context.Background(), principal.Caller{Principal: d.caller}, w.WebhookId); err != nil {
		t.Fatal(err)
	}
	if h := d.dispatch.Deliver(context.Background(), job(w), 1); h.Next != app.Drop || h.Result != app.ResultDropped || len(d.recv.got) != 0 {
		t.Fatalf("%+v, %d sent", h, len(d.recv.got))
	}
}

// behindReplica is the registry of a replica that has not yet applied a
// webhook another replica created: it learns it when it catches up.
type behindReplica struct {
	*memory.Registry
	missing *webhooksv1.Webhook
	caught  int
}

func (r *behindReplica) CatchUp(context.Context) error {
	r.caught++
	r.Put(1, r.missing)
	return nil
}

// A job for a webhook this replica has not learnt yet (created on another
// a moment ago) is delivered once it has caught up, which it does with no
// event's time to go by (the job's clock need not be the stream's).
func TestDeliveryOfAWebhookNotYetLearntCatchesUpFirst(t *testing.T) {
	d := newDispatch(t, answering(204))
	w := d.hook(t, "ws_a", []string{"call_ended"}, nil)
	behind := &behindReplica{Registry: memory.NewRegistry(), missing: w}
	d.dispatch.Subscriptions = behind
	h := d.dispatch.Deliver(context.Background(), job(w), 1)
	if h.Next != app.Done || h.Result != app.ResultDelivered || len(d.recv.got) != 1 || behind.caught != 1 {
		t.Fatalf("%+v, %d sent, caught up %d times", h, len(d.recv.got), behind.caught)
	}
	// Known now: the next job does not ask again.
	if h := d.dispatch.Deliver(context.Background(), job(w), 1); h.Next != app.Done || behind.caught != 1 {
		t.Fatalf("%+v, caught up %d times", h, behind.caught)
	}
}

// recordAndObserve is the AttemptRecorder as the dispatchers together
// are: each attempt recorded reaches the auto-disable rule.
type recordAndObserve struct {
	app.AttemptRecorder
	ad *app.AutoDisabler
}

func (r recordAndObserve) Record(ctx context.Context, a *webhooksv1.DeliveryAttempt) error {
	if err := r.AttemptRecorder.Record(ctx, a); err != nil {
		return err
	}
	_, err := r.ad.Observe(ctx, a)
	return err
}

func (r recordAndObserve) RecordDurable(ctx context.Context, a *webhooksv1.DeliveryAttempt) error {
	if err := r.AttemptRecorder.RecordDurable(ctx, a); err != nil {
		return err
	}
	_, err := r.ad.Observe(ctx, a)
	return err
}

// Deliveries that keep failing for good disable the webhook; what comes
// after is logged as not sent rather than queued.
func TestFailingDeliveriesAutoDisableTheWebhook(t *testing.T) {
	d := newDispatch(t, answering(500))
	ctx := context.Background()
	w := d.hook(t, "ws_a", []string{"call_ended"}, retries(0, 1, false))
	ad := &app.AutoDisabler{Repo: d.app.Webhooks, Registry: d.reg, Runs: memory.NewRunLog(), Rule: domain.AutoDisable{Failures: 3}}
	d.dispatch.Attempts = recordAndObserve{AttemptRecorder: d.attempts, ad: ad}
	for i, id := range []string{"evt_1", "evt_2", "evt_3"} {
		d.clock = d.clock.Add(time.Second)
		j := job(w)
		j.EventId = id
		if h := d.dispatch.Deliver(ctx, j, 1); h.Next != app.Drop || h.Result != app.ResultFailed {
			t.Fatalf("delivery %d: %+v", i+1, h)
		}
	}
	now, _ := d.reg.Get("ws_a", w.WebhookId)
	if now.Active || now.DisabledReason != domain.DisabledFailing {
		t.Fatalf("after 3 failures in a row: %v", now)
	}
	n := 0
	if h := d.dispatch.Fanout(ctx, event("ws_a", "call_ended", "evt_4", d.clock.Add(time.Second), &n)); h.Next != app.Done || len(d.queue.Jobs()) != 0 {
		t.Fatalf("fan-out to the disabled webhook: %+v, jobs %v", h, jobIDs(d.queue))
	}
	if got := d.attempts.Recent(w.WebhookId, domain.LogFilter{}, 1); got[0].EventId != "evt_4" || got[0].Error != app.NotSentDisabled {
		t.Fatalf("the event after: %v", got)
	}
}

// An invocation's completion reaches webhooks as test_invocation_completed
// with the invocation's summary (the event's counts, not the stale ones
// the invocation carried; its runs, not its jobs, which count every
// resubmitted attempt again) and the event's time; a cancellation as
// test_invocation_cancelled; any other TESTING event, or one without its
// invocation, is nothing to fan out.
func TestInvocationOutcomesFanOutWithTheirSummary(t *testing.T) {
	d := newDispatch(t, answering(200))
	w := d.hook(t, "ws_a", []string{"test_invocation_completed", "test_invocation_cancelled"}, nil)
	occurred := d.clock.Add(-time.Minute)
	meta := &commonv1.EventMeta{WorkspaceId: "ws_a", OccurredAtUnixMs: occurred.UnixMilli()}
	// Five runs (five tests, once each), two of them resubmitted: seven jobs.
	tests := make([]*testingv1.PlannedTest, 5)
	inv := &testingv1.Invocation{InvocationId: "tinv_1", WorkspaceId: "ws_a", AgentId: "agent_1", Status: "completed",
		Tests: tests, RepeatCount: 1, JobsTotal: 7, PassedCount: 1}
	s := func(id string) app.Stored { return app.Stored{EventID: id, At: d.clock.Add(time.Second)} }

	for _, c := range []struct {
		typ string
		msg proto.Message
	}{
		{events.TypeInvocationCreated, &testingv1.InvocationCreated{Meta: meta, Invocation: inv}},
		{events.TypeInvocationCompleted, &testingv1.InvocationCompleted{Meta: meta}},
	} {
		if _, ok := app.InvocationFanout(c.typ, c.msg, s("evt_0")); ok {
			t.Fatalf("%s fanned out", c.typ)
		}
	}
	completed, ok := app.InvocationFanout(events.TypeInvocationCompleted, &testingv1.InvocationCompleted{Meta: meta, Invocation: inv, PassedCount: 3, FailedCount: 2}, s("evt_1"))
	cancelled, ok2 := app.InvocationFanout(events.TypeInvocationCancelled, &testingv1.InvocationCancelled{Meta: meta, Invocation: inv}, s("evt_2"))
	if !ok || !ok2 {
		t.Fatalf("an outcome is not fanned out: completed %v, cancelled %v", ok, ok2)
	}
	if h := d.dispatch.Fanout(context.Background(), completed, cancelled); h.Next != app.Done {
		t.Fatalf("fan-out: %+v", h)
	}
	jobs := d.queue.Jobs()
	if len(jobs) != 2 || jobs[0].WebhookId != w.WebhookId || jobs[0].Event != "test_invocation_completed" || jobs[1].Event != "test_invocation_cancelled" {
		t.Fatalf("jobs %v", jobIDs(d.queue))
	}
	var env struct {
		Event     string                `json:"event"`
		Timestamp string                `json:"timestamp"`
		Data      domain.InvocationData `json:"data"`
	}
	if err := json.Unmarshal(jobs[0].Body, &env); err != nil {
		t.Fatal(err)
	}
	if env.Event != "test_invocation_completed" || env.Timestamp != wire.FormatTimestamp(occurred) ||
		env.Data.InvocationID != "tinv_1" || env.Data.TestRunCount != 5 || env.Data.PassedCount != 3 || env.Data.FailedCount != 2 {
		t.Fatalf("envelope %+v", env)
	}
	if inv.PassedCount != 1 {
		t.Fatal("the event's invocation was changed in place")
	}
	// A load test has no runs: its counts are its steps'.
	load := &testingv1.Invocation{InvocationId: "tinv_2", WorkspaceId: "ws_a", Status: "completed", Load: &testingv1.LoadTest{Steps: []int32{1, 10, 50}}}
	ev, _ := app.InvocationFanout(events.TypeInvocationCompleted, &testingv1.InvocationCompleted{Meta: meta, Invocation: load, PassedCount: 2, FailedCount: 1}, s("evt_3"))
	body, err := ev.Body()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Data.TestRunCount != 3 || env.Data.PassedCount != 2 || env.Data.FailedCount != 1 {
		t.Fatalf("a load test's envelope %+v %v", env, err)
	}
}

// A job already queued when the dispatcher disables its webhook (its
// receiver answered 410, or its deliveries kept failing) is logged as not
// sent, as the events fanned out after it are, so that recover replays it
// once the webhook is enabled. Before, it was dropped with its last line
// saying "retrying", and recover replayed only the later events.
func TestAJobQueuedWhenItsWebhookIsDisabledIsRecovered(t *testing.T) {
	d := newDispatch(t, answering(500))
	ctx := context.Background()
	start := d.clock.UnixMilli()
	w := d.hook(t, "ws_a", []string{"call_ended"}, retries(3, 1, false))
	if h := d.dispatch.Deliver(ctx, job(w), 1); h.Next != app.RetryLater {
		t.Fatalf("first attempt: %+v", h)
	}
	if err := app.DisableGone(ctx, d.app.Webhooks, w, 410, d.clock); err != nil { // another delivery's receiver was gone
		t.Fatal(err)
	}
	d.clock = d.clock.Add(time.Second)
	if h := d.dispatch.Deliver(ctx, job(w), 2); h.Result != app.ResultDropped {
		t.Fatalf("the retry after the webhook was disabled: %+v", h)
	}
	n := 0
	d.dispatch.Fanout(ctx, event("ws_a", "call_ended", "evt_2", d.clock, &n))
	d.set(t, w, domain.Input{Active: ptr(true)})
	out, _, err := d.app.Recover(ctx, principal.Caller{Principal: d.caller}, w.WebhookId, domain.LogFilter{FromMs: start})
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, r := range out {
		events = append(events, r.EventID)
	}
	slices.Sort(events)
	if !slices.Equal(events, []string{"evt_1", "evt_2"}) {
		t.Fatalf("recovered %v; want the queued evt_1 and the later evt_2", events)
	}
}

// sealerFailingOnce cannot open a secret the first time (its key not
// loaded yet).
type sealerFailingOnce struct {
	app.Sealer
	failed bool
}

func (s *sealerFailingOnce) Open(id string, sealed []byte) ([]byte, error) {
	if !s.failed {
		s.failed = true
		return nil, errors.New("key not loaded yet")
	}
	return s.Sealer.Open(id, sealed)
}

// A delivery whose first attempt was never recorded (its secret not
// opened yet; a job given back as its replica stopped counts as an
// attempt too) can still be resent and recovered: its final attempt
// carries the body. Before, only an attempt numbered 1 carried it, and
// the delivery that failed for good was "not found".
func TestADeliveryWhoseFirstAttemptWasNotRecordedIsResent(t *testing.T) {
	d := newDispatch(t, answering(400))
	ctx := context.Background()
	start := d.clock.UnixMilli()
	w := d.hook(t, "ws_a", []string{"call_ended"}, nil)
	d.dispatch.Sealer = &sealerFailingOnce{Sealer: d.dispatch.Sealer}
	if h := d.dispatch.Deliver(ctx, job(w), 1); h.Next != app.RetryLater {
		t.Fatalf("the attempt without its secret: %+v", h)
	}
	if h := d.dispatch.Deliver(ctx, job(w), 2); h.Result != app.ResultFailed {
		t.Fatalf("the second attempt: %+v", h)
	}
	logged := d.attempts.Recent(w.WebhookId, domain.LogFilter{}, 10)
	if len(logged) != 1 || logged[0].GetRetryCount() != 1 || string(logged[0].GetRequestBody()) != `{"event":"call_ended"}` {
		t.Fatalf("logged %v; want the final attempt, retry 1, with its body", logged)
	}
	caller := principal.Caller{Principal: d.caller}
	if _, err := d.app.Resend(ctx, caller, w.WebhookId, app.DeliveryID(logged[0])); err != nil {
		t.Fatalf("resend: %v", err)
	}
	if out, _, err := d.app.Recover(ctx, caller, w.WebhookId, domain.LogFilter{FromMs: start}); err != nil || len(out) != 1 {
		t.Fatalf("recover: %v %v; want the delivery", out, err)
	}
}

// backlogOf is a Backlog that says each workspace has waiting deliveries
// (of one webhook), and counts the questions.
type backlogOf struct {
	waiting map[string]uint64
	asked   int
}

func (b *backlogOf) Waiting(_ context.Context, workspaceID string) (map[string]uint64, error) {
	b.asked++
	return map[string]uint64{"whk_any": b.waiting[workspaceID]}, nil
}

func (b *backlogOf) Queued(context.Context) (uint64, error) {
	var n uint64
	for _, w := range b.waiting {
		n += w
	}
	return n, nil
}

// A workspace with its share of the shared delivery queue waiting has a
// failed delivery fail for good, logged as not retried and recoverable,
// instead of adding a retry held in the room every workspace shares;
// another workspace's deliveries are retried as before. Before, one
// workspace whose receivers asked for day-long retries could fill that
// room and stall every workspace's deliveries.
func TestAWorkspaceWithItsShareWaitingIsNotRetried(t *testing.T) {
	d := newDispatch(t, answering(500))
	ctx := context.Background()
	start := d.clock.UnixMilli()
	backlog := &backlogOf{waiting: map[string]uint64{"ws_a": 3, "ws_b": 2}}
	d.dispatch.Share = &app.WorkspaceShare{Backlog: backlog, Most: 3}
	crowded := d.hook(t, "ws_a", []string{"call_ended"}, retries(3, 1, false))
	other := d.hook(t, "ws_b", []string{"call_ended"}, retries(3, 1, false))
	if h := d.dispatch.Deliver(ctx, job(other), 1); h.Next != app.RetryLater {
		t.Fatalf("a workspace under its share: %+v; want a retry", h)
	}
	if h := d.dispatch.Deliver(ctx, job(crowded), 1); h.Next != app.Drop || h.Result != app.ResultFailed {
		t.Fatalf("a workspace at its share: %+v; want failed for good", h)
	}
	logged := d.attempts.Recent(crowded.WebhookId, domain.LogFilter{}, 1)
	if len(logged) != 1 || !logged[0].GetFinal() || !strings.Contains(logged[0].GetError(), app.NotRetriedCrowded) {
		t.Fatalf("logged %v; want a final attempt saying it was not retried", logged)
	}
	out, _, err := d.app.Recover(ctx, principal.Caller{Principal: d.caller}, crowded.WebhookId, domain.LogFilter{FromMs: start})
	if err != nil || len(out) != 1 {
		t.Fatalf("recover: %v %v; want the delivery", out, err)
	}
	// The count is asked once a second per workspace, not per failure.
	asked := backlog.asked
	d.dispatch.Deliver(ctx, job(crowded), 1)
	if backlog.asked != asked {
		t.Fatalf("the count asked again within a second: %d questions", backlog.asked)
	}
}

// An event goes to a webhook as the webhook was when the event was
// stored, whatever changed before the fan-out got to it: one stored while
// it was paused is not sent once it is active again, and one stored while
// it was active is queued though it was paused since. Its delivery is
// then logged as not sent, and recover replays it once the webhook is
// active: nothing is dropped unseen.
func TestAnEventGoesToTheWebhookAsItWasWhenStored(t *testing.T) {
	d := newDispatch(t, answering(200))
	ctx := context.Background()
	w := d.hook(t, "ws_a", []string{"call_ended"}, nil)
	tick := func() time.Time { d.clock = d.clock.Add(time.Second); return d.clock }

	whileActive := tick()
	tick()
	d.set(t, w, domain.Input{Active: ptr(false)})
	whilePaused := tick()
	tick()
	d.set(t, w, domain.Input{Active: ptr(true)})
	tick()
	d.set(t, w, domain.Input{Active: ptr(false)})

	n := 0
	if h := d.dispatch.Fanout(ctx, event("ws_a", "call_ended", "evt_paused", whilePaused, &n), event("ws_a", "call_ended", "evt_active", whileActive, &n)); h.Next != app.Done {
		t.Fatalf("fan-out: %+v", h)
	}
	if got, want := jobIDs(d.queue), []string{"evt_active→" + w.WebhookId}; !slices.Equal(got, want) {
		t.Fatalf("jobs %v, want %v: the webhook as it was at each event", got, want)
	}
	if h := d.dispatch.Deliver(ctx, d.queue.Jobs()[0], 1); h.Next != app.Drop || len(d.recv.got) != 0 {
		t.Fatalf("the delivery to the webhook paused since: %+v, sent %d", h, len(d.recv.got))
	}
	logged := d.attempts.Recent(w.WebhookId, domain.LogFilter{}, 10)
	if len(logged) != 1 || logged[0].EventId != "evt_active" || logged[0].Error != app.NotSentInactive || !logged[0].Final {
		t.Fatalf("logged %v, want evt_active as not sent", logged)
	}
	// Not sent is no outcome of the receiver: its health and its run of
	// failures (what auto-disables a webhook) count nothing.
	if h := d.attempts.Health(w.WebhookId); h.Attempts != 0 || h.ConsecutiveFailures != 0 || h.LastFailureUnixMs != 0 {
		t.Fatalf("health after a not-sent entry: %+v", h)
	}
	runs := memory.NewRunLog()
	runs.Observe(logged[0])
	if r := runs.Run(w.WebhookId, time.Time{}); r.Failures != 0 {
		t.Fatalf("the failure run after a not-sent entry: %+v", r)
	}
	tick()
	d.set(t, w, domain.Input{Active: ptr(true)})
	p := d.caller
	p.WorkspaceID = "ws_a"
	resent, _, err := d.app.Recover(ctx, principal.Caller{Principal: p}, w.WebhookId, domain.LogFilter{})
	if err != nil || len(resent) != 1 {
		t.Fatalf("recover: %v %v, want evt_active queued again", resent, err)
	}
}

// A workspace with its share of the queue waiting queues no new
// deliveries: each is logged as not sent, and recover replays it; another
// workspace's events are queued as before. Before, one workspace whose
// events outran its receivers queued 300,000 jobs, and every other
// workspace's deliveries waited minutes behind them.
func TestAWorkspaceWithItsShareWaitingQueuesNoMore(t *testing.T) {
	d := newDispatch(t, answering(200))
	ctx := context.Background()
	start := d.clock.UnixMilli()
	d.dispatch.Share = &app.WorkspaceShare{Backlog: &backlogOf{waiting: map[string]uint64{"ws_a": 3, "ws_b": 2}}, Most: 3}
	crowded := d.hook(t, "ws_a", []string{"call_ended"}, nil)
	other := d.hook(t, "ws_b", []string{"call_ended"}, nil)
	at := d.clock.Add(time.Second)
	evs := []app.FanoutEvent{
		{WorkspaceID: "ws_a", Name: "call_ended", ID: "evt_a", StoredAt: at, Body: func() ([]byte, error) { return []byte(`{}`), nil }},
		{WorkspaceID: "ws_b", Name: "call_ended", ID: "evt_b", StoredAt: at, Body: func() ([]byte, error) { return []byte(`{}`), nil }},
	}
	if h := d.dispatch.Fanout(ctx, evs...); h.Next != app.Done {
		t.Fatalf("fan-out: %+v", h)
	}
	if got := jobIDs(d.queue); len(got) != 1 || got[0] != "evt_b→"+other.WebhookId {
		t.Fatalf("queued %v; want only the other workspace's delivery", got)
	}
	logged := d.attempts.Recent(crowded.WebhookId, domain.LogFilter{}, 1)
	if len(logged) != 1 || !logged[0].GetFinal() || !strings.Contains(logged[0].GetError(), app.NotQueuedCrowded) {
		t.Fatalf("logged %v; want a final attempt saying it was not sent", logged)
	}
	out, _, err := d.app.Recover(ctx, principal.Caller{Principal: d.caller}, crowded.WebhookId, domain.LogFilter{FromMs: start})
	if err != nil || len(out) != 1 {
		t.Fatalf("recover: %v %v; want the delivery", out, err)
	}
}
