package dispatcher

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"
	webhooksv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/webhooks/v1"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// Fan-out consumers pull events in batches of fanoutBatch and hold at
// most fanoutMaxAckPending unacknowledged.
const (
	fanoutBatch         = 256
	fanoutMaxAckPending = 1000
)

func (d *Dispatcher) startFanout() error {
	if err := d.consume(events.PlatformStream, FanoutPlatformDurable, events.PlatformAll, fanoutMaxAckPending, fanoutBatch, d.fanoutPlatform); err != nil {
		return err
	}
	if d.opts.NoTickets {
		return nil
	}
	// TICKETS and TESTING belong to other services, which may start later.
	for _, c := range []struct {
		stream, durable, filter string
		handle                  func(jetstream.Msg)
	}{
		{events.TicketsStream, FanoutTicketsDurable, events.TicketsAll, d.fanoutTicket},
		{events.TestingStream, FanoutTestingDurable, events.TestingInvocationsAll, d.fanoutInvocation},
	} {
		go func() {
			if _, err := eventstore.WaitForStream(d.ctx, d.JS, c.stream); err != nil {
				return
			}
			if err := d.consume(c.stream, c.durable, c.filter, fanoutMaxAckPending, fanoutBatch, c.handle); err != nil && d.ctx.Err() == nil {
				d.Log.Error("domain events will not reach webhooks", "stream", c.stream, "err", err)
			}
		}()
	}
	return nil
}

// invocationEvents maps the TESTING event types exposed to webhooks to
// their public names.
var invocationEvents = map[string]string{
	events.TypeInvocationCompleted: "test_invocation_completed",
	events.TypeInvocationCancelled: "test_invocation_cancelled",
}

// decoded is the record and event of m when serves says a fan-out serves
// its type. A message of another type, or of a newer type this build
// cannot decode, is acked and skipped; one that is not a record at all is
// left to redelivery.
func decoded(m jetstream.Msg, serves func(typ string) bool) (eventstore.Record, proto.Message, bool) {
	rec, err := eventstore.RecordFromMsg(m)
	if err != nil {
		return rec, nil, false
	}
	if !serves(rec.Type) {
		_ = m.Ack()
		return rec, nil, false
	}
	msg, err := esproto.Decode(rec)
	if err != nil {
		_ = m.Ack()
		return rec, nil, false
	}
	return rec, msg, true
}

// fanoutInvocation exposes an invocation's completion or cancellation
// with its summary as data.
func (d *Dispatcher) fanoutInvocation(m jetstream.Msg) {
	rec, msg, ok := decoded(m, func(typ string) bool { _, ok := invocationEvents[typ]; return ok })
	if !ok {
		return
	}
	name := invocationEvents[rec.Type]
	var inv *testingv1.Invocation
	switch e := msg.(type) {
	case *testingv1.InvocationCompleted:
		if e.GetInvocation() != nil {
			inv = proto.Clone(e.GetInvocation()).(*testingv1.Invocation)
			inv.PassedCount, inv.FailedCount = e.GetPassedCount(), e.GetFailedCount()
		}
	case *testingv1.InvocationCancelled:
		inv = e.GetInvocation()
	}
	if inv == nil {
		_ = m.Ack()
		return
	}
	at := rec.Time
	if ms := events.MetaOf(msg).GetOccurredAtUnixMs(); ms > 0 {
		at = time.UnixMilli(ms)
	}
	body := func() ([]byte, error) {
		data, err := json.Marshal(invocationData(inv))
		if err != nil {
			return nil, err
		}
		return json.Marshal(wire.Envelope{Event: name, Timestamp: wire.FormatTimestamp(at), Data: data})
	}
	d.fanout(m, inv.GetWorkspaceId(), name, eventIDOf(m.Headers(), events.TestingStream, rec.Seq), body, rec.Time)
}

func invocationData(inv *testingv1.Invocation) domain.InvocationData {
	return domain.InvocationData{
		InvocationID: inv.GetInvocationId(), AgentID: inv.GetAgentId(), AgentName: inv.GetAgentName(), BranchID: inv.GetBranchId(),
		FolderID: inv.GetFolderId(), Title: inv.GetTitle(), Status: inv.GetStatus(), RepeatCount: inv.GetRepeatCount(),
		TestRunCount: inv.GetJobsTotal(), PassedCount: inv.GetPassedCount(), FailedCount: inv.GetFailedCount(),
		RanByUserEmail: inv.GetRanByUserEmail(), CreatedAtUnixSecs: inv.GetCreatedAtUnix(),
		CompletedAtUnixSecs: inv.CompletedAtUnix, CancelledAtUnixSecs: inv.CancelledAtUnix,
	}
}

// eventIDOf is the id of a stored event, stable across redeliveries: its
// Voiceai-Event-Id, else its Nats-Msg-Id, else derived from its position.
func eventIDOf(h nats.Header, stream string, seq uint64) string {
	if id := h.Get(events.HeaderEventID); id != "" {
		return id
	}
	if id := h.Get(events.HeaderMsgID); id != "" {
		return id
	}
	return "evt_" + esproto.StableID(stream, strconv.FormatUint(seq, 10))
}

// fanoutPlatform turns a spec 6.1 envelope on platform.evt.<ws>.<event>
// into delivery jobs.
func (d *Dispatcher) fanoutPlatform(m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		return
	}
	ws, name, ok := events.ParsePlatformSubject(m.Subject())
	if !ok || !domain.IsPlatformEvent(name) {
		_ = m.Ack() // not an event anyone can subscribe to
		return
	}
	var env wire.Envelope
	if err := json.Unmarshal(m.Data(), &env); err != nil {
		d.Log.WarnContext(traceOf(d.ctx, m), "platform event is not a JSON envelope; not delivered", "subject", m.Subject(), "seq", meta.Sequence.Stream, "err", err)
		_ = m.Term()
		return
	}
	env.Event = name
	if _, err := time.Parse(time.RFC3339Nano, env.Timestamp); err != nil {
		env.Timestamp = wire.FormatTimestamp(meta.Timestamp)
	}
	if len(env.Data) == 0 || env.Data[0] != '{' {
		env.Data = json.RawMessage(`{}`)
	}
	// A sealed transcript is for the conversation's reader alone: a
	// delivery (queued on a stream, logged) carries none.
	env.Data = convseal.WithoutSealed(env.Data)
	body := func() ([]byte, error) { return json.Marshal(env) }
	d.fanout(m, ws, name, eventIDOf(m.Headers(), events.PlatformStream, meta.Sequence.Stream), body, meta.Timestamp)
}

// fanoutTicket exposes a TICKETS event as the public ticket event it is
// (publicTicketEvent), with the ticket and what the event adds as data
// (ticketEventData).
func (d *Dispatcher) fanoutTicket(m jetstream.Msg) {
	rec, msg, ok := decoded(m, func(typ string) bool { return strings.HasPrefix(typ, "tickets.") })
	if !ok {
		return
	}
	name, public := publicTicketEvent(rec.Type, msg)
	if !domain.IsTicketEvent(name) {
		_ = m.Ack()
		return
	}
	metaMsg := events.MetaOf(msg)
	ws := metaMsg.GetWorkspaceId()
	if ws == "" {
		ws = rec.Workspace
	}
	at := rec.Time
	if ms := metaMsg.GetOccurredAtUnixMs(); ms > 0 {
		at = time.UnixMilli(ms)
	}
	body := func() ([]byte, error) {
		data, err := ticketEventData(public)
		if err != nil {
			return nil, err
		}
		return json.Marshal(wire.Envelope{Event: name, Timestamp: wire.FormatTimestamp(at), Data: data})
	}
	d.fanout(m, ws, name, eventIDOf(m.Headers(), events.TicketsStream, rec.Seq), body, rec.Time)
}

// statusResolved is the tickets service's resolved status.
const statusResolved = "resolved"

// publicTicketEvent is the public name of a TICKETS event of type typ and
// the message of that name carrying it: the API's changes are the public
// events themselves ("<type without tickets.>"); the QA worker's own
// events, which say more than a subscriber asks for, are the API change
// they amount to, so a change reaches webhooks the same whoever made it.
func publicTicketEvent(typ string, msg proto.Message) (string, proto.Message) {
	switch e := msg.(type) {
	case *ticketsv1.TestFailureRecorded:
		switch {
		case e.GetReopened():
			return "ticket_status_changed", &ticketsv1.TicketStatusChanged{Meta: e.GetMeta(), Ticket: e.GetTicket(), PreviousStatus: statusResolved}
		case len(e.GetInvocationIds()) > 0: // each new failing invocation is a comment
			return "ticket_commented", &ticketsv1.TicketCommented{Meta: e.GetMeta(), Ticket: e.GetTicket()}
		default: // more failed runs of an invocation already recorded
			return "ticket_updated", &ticketsv1.TicketUpdated{Meta: e.GetMeta(), Ticket: e.GetTicket(), ChangedFields: []string{"test_failures"}}
		}
	case *ticketsv1.TicketClustered:
		return "ticket_updated", &ticketsv1.TicketUpdated{Meta: e.GetMeta(), Ticket: e.GetTicket(), ChangedFields: e.GetChangedFields()}
	}
	return strings.TrimPrefix(typ, "tickets."), msg
}

// ticketEventData is a ticket event's data: the ticket as the API answers
// it, so a receiver decodes the same shape as from GET, beside what the
// event type adds (changed_fields, previous_status, target_ticket_id,
// source_ticket_ids, in proto field names; none is a 64-bit integer).
func ticketEventData(msg proto.Message) (json.RawMessage, error) {
	holder, ok := msg.(interface{ GetTicket() *ticketsv1.Ticket })
	if !ok || holder.GetTicket() == nil {
		return nil, errors.New("a ticket event without its ticket")
	}
	rest := proto.Clone(msg)
	r := rest.ProtoReflect()
	fields := r.Descriptor().Fields()
	r.Clear(fields.ByNumber(1)) // the EventMeta is internal
	r.Clear(fields.ByName("ticket"))
	extra, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(rest)
	if err != nil {
		return nil, err
	}
	data := map[string]json.RawMessage{}
	if err := json.Unmarshal(extra, &data); err != nil {
		return nil, err
	}
	if data["ticket"], err = json.Marshal(wire.TicketOf(holder.GetTicket())); err != nil {
		return nil, err
	}
	return json.Marshal(data)
}

// fanout publishes one job per matching webhook (deduplicated by
// "<event id>:<webhook id>", so a redelivered event adds no second job),
// and acknowledges the event once every job is stored. The body is
// encoded only when some webhook wants the event: most events of a busy
// workspace match none.
func (d *Dispatcher) fanout(m jetstream.Msg, ws, name, eventID string, encode func() ([]byte, error), storedAt time.Time) {
	if err := d.Registry.WaitCurrent(d.ctx, storedAt); err != nil {
		_ = m.NakWithDelay(time.Second)
		return
	}
	hooks, missed := d.Registry.Match(ws, name, storedAt), d.Registry.MatchMissed(ws, name, storedAt)
	if len(hooks) == 0 && len(missed) == 0 {
		_ = m.Ack()
		return
	}
	body, err := encode()
	if err != nil {
		d.Log.ErrorContext(traceOf(d.ctx, m), "event cannot be encoded; not delivered", "event_id", eventID, "err", err)
		_ = m.Term()
		return
	}
	// An auto-disabled webhook is sent nothing, nor queued anything: the
	// event is logged for it as a delivery not sent (with its body), which
	// recover replays once it is enabled again.
	for _, w := range missed {
		job := &webhooksv1.DeliveryJob{EventId: eventID, WorkspaceId: ws, WebhookId: w.GetWebhookId(), Event: name, Body: body, PublishedAtUnixMs: storedAt.UnixMilli()}
		att := app.NewAttempt(job, w, 0, d.Repo.Now(), delivery.Result{Error: app.NotSentDisabled}, domain.GiveUp)
		if _, err := adapters.PublishAttempt(d.JS, att); err != nil {
			d.Log.WarnContext(traceOf(d.ctx, m), "fan-out failed; the event will be redelivered", "event_id", eventID, "err", err)
			_ = m.NakWithDelay(time.Second)
			return
		}
	}
	futures := make([]jetstream.PubAckFuture, 0, len(hooks))
	var failed error
	for _, w := range hooks {
		subject, err := events.WebhookDeliverySubject(ws, w.GetWebhookId())
		if err != nil {
			continue
		}
		data, err := proto.Marshal(&webhooksv1.DeliveryJob{
			EventId: eventID, WorkspaceId: ws, WebhookId: w.GetWebhookId(), Event: name, Body: body,
			PublishedAtUnixMs: storedAt.UnixMilli(),
		})
		if err != nil {
			failed = err
			break
		}
		job := nats.NewMsg(subject)
		job.Data = data
		job.Header.Set(events.HeaderEventID, eventID)
		job.Header.Set(events.HeaderWorkspaceID, ws)
		if tp := m.Headers().Get(events.HeaderTraceparent); tp != "" {
			job.Header.Set(events.HeaderTraceparent, tp) // the delivery continues the event's trace
		}
		f, err := d.JS.PublishMsgAsync(job, jetstream.WithMsgID(eventID+":"+w.GetWebhookId()))
		if err != nil {
			failed = err
			break
		}
		futures = append(futures, f)
	}
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			failed = err
		case <-timeout.C:
			failed = errors.New("job publish timed out")
		}
		if failed != nil {
			break
		}
	}
	if failed != nil {
		d.Log.WarnContext(traceOf(d.ctx, m), "fan-out failed; the event will be redelivered", "event_id", eventID, "err", failed)
		_ = m.NakWithDelay(time.Second)
		return
	}
	_ = m.Ack()
}
