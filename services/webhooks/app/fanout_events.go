package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	events "github.com/voiceai-platform/voiceai/proto-events"
	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// The events the dispatcher fans out, each mapped to what a receiver
// gets: platform events (spec 6.1 envelopes), the tickets service's
// ticket events and the testing service's invocation outcomes.

// Stored is where an event was found: its workspace (when the stream
// says it), its id, stable across redeliveries, when it was stored, and
// the trace it belongs to.
type Stored struct {
	WorkspaceID string
	EventID     string
	At          time.Time
	Traceparent string
}

// PlatformFanout is the fan-out of a platform event: data is the envelope
// stored at platform.evt.<workspace>.<name>. ok is false for an event
// nobody may subscribe to, and for one that is not a JSON envelope
// (logged): there is nothing to fan out.
func (d *Dispatch) PlatformFanout(ctx context.Context, name string, data []byte, s Stored) (e FanoutEvent, ok bool) {
	if !domain.IsPlatformEvent(name) {
		return FanoutEvent{}, false // not an event anyone can subscribe to
	}
	var env wire.Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		d.Log.WarnContext(ctx, "platform event is not a JSON envelope; not delivered", "event", name, "event_id", s.EventID, "err", err)
		return FanoutEvent{}, false
	}
	env.Event = name
	if _, err := time.Parse(time.RFC3339Nano, env.Timestamp); err != nil {
		env.Timestamp = wire.FormatTimestamp(s.At)
	}
	if len(env.Data) == 0 || env.Data[0] != '{' {
		env.Data = json.RawMessage(`{}`)
	}
	// A sealed transcript is for the conversation's reader alone: a
	// delivery (queued on a stream, logged) carries none.
	env.Data = convseal.WithoutSealed(env.Data)
	return FanoutEvent{WorkspaceID: s.WorkspaceID, Name: name, ID: s.EventID, StoredAt: s.At, Traceparent: s.Traceparent,
		Body: func() ([]byte, error) { return json.Marshal(env) }}, true
}

// TicketFanout is the fan-out of an event of the tickets service as the
// public ticket event it is (PublicTicketEvent), with the ticket and what
// the event adds as data. ok is false for any other event.
func TicketFanout(typ string, msg proto.Message, s Stored) (e FanoutEvent, ok bool) {
	name, extra := PublicTicketEvent(typ, msg)
	if !domain.IsTicketEvent(name) {
		return FanoutEvent{}, false
	}
	meta := events.MetaOf(msg)
	ws := meta.GetWorkspaceId()
	if ws == "" {
		ws = s.WorkspaceID
	}
	at := s.At
	if ms := meta.GetOccurredAtUnixMs(); ms > 0 {
		at = time.UnixMilli(ms)
	}
	return FanoutEvent{WorkspaceID: ws, Name: name, ID: s.EventID, StoredAt: s.At, Traceparent: s.Traceparent, Body: func() ([]byte, error) {
		data, err := TicketEventData(msg, extra)
		if err != nil {
			return nil, err
		}
		return json.Marshal(wire.Envelope{Event: name, Timestamp: wire.FormatTimestamp(at), Data: data})
	}}, true
}

// TicketFanoutOf is TicketFanout of an event still encoded, which decode
// decodes. Most ticket events are named by their type alone, and most
// match no webhook (every ticket write of a workspace without one), so
// such an event is decoded only when a webhook wants its body. One whose
// type carries the public change it amounts to (the QA worker's, the
// clustering step's), or whose workspace the stream did not say, is
// decoded at once; one that does not decode is fanned out to nobody.
func TicketFanoutOf(typ string, s Stored, decode func() (proto.Message, error)) (FanoutEvent, bool) {
	if s.WorkspaceID == "" || publicChangeTypes()[typ] {
		msg, err := decode()
		if err != nil {
			return FanoutEvent{}, false
		}
		return TicketFanout(typ, msg, s)
	}
	name := strings.TrimPrefix(typ, "tickets.") // PublicTicketEvent's, for an event that carries no public change
	if !domain.IsTicketEvent(name) {
		return FanoutEvent{}, false
	}
	return FanoutEvent{WorkspaceID: s.WorkspaceID, Name: name, ID: s.EventID, StoredAt: s.At, Traceparent: s.Traceparent, Body: func() ([]byte, error) {
		msg, err := decode()
		if err != nil {
			return nil, err
		}
		e, ok := TicketFanout(typ, msg, s)
		if !ok {
			return nil, fmt.Errorf("a %s event that is no public ticket event", typ)
		}
		return e.Body()
	}}, true
}

// publicChangeTypes are the TICKETS event types that carry the public
// change they amount to (publicChanger).
var publicChangeTypes = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	for _, typ := range events.Types() {
		if msg, ok := events.New(typ); ok {
			if _, ok := msg.(publicChanger); ok {
				out[typ] = true
			}
		}
	}
	return out
})

// PublicTicketEvent is the public name of a TICKETS event of type typ and
// the message holding what that event adds beside the ticket. The tickets
// service decides it: an event of its own (the QA worker's, the
// clustering step's) carries the public change it amounts to; the API's
// changes are the public events themselves ("<type without tickets.>").
func PublicTicketEvent(typ string, msg proto.Message) (string, proto.Message) {
	if p, ok := msg.(publicChanger); ok {
		if c := p.GetPublic(); c.GetEvent() != "" {
			return c.GetEvent(), &ticketsv1.PublicChange{PreviousStatus: c.GetPreviousStatus(), ChangedFields: c.GetChangedFields()}
		}
	}
	return strings.TrimPrefix(typ, "tickets."), msg
}

// publicChanger is an event of the tickets service's own, which says
// what it amounts to for subscribers.
type publicChanger interface {
	GetPublic() *ticketsv1.PublicChange
}

// TicketEventData is a ticket event's data: the ticket of msg as the API
// answers it, so a receiver decodes the same shape as from GET, beside
// what extra adds (changed_fields, previous_status, target_ticket_id,
// source_ticket_ids, in proto field names; none is a 64-bit integer).
// extra's meta and ticket, if any, are left out.
func TicketEventData(msg, extra proto.Message) (json.RawMessage, error) {
	holder, ok := msg.(interface{ GetTicket() *ticketsv1.Ticket })
	if !ok || holder.GetTicket() == nil {
		return nil, errors.New("a ticket event without its ticket")
	}
	rest := proto.Clone(extra)
	r := rest.ProtoReflect()
	fields := r.Descriptor().Fields()
	for _, name := range []string{"meta", "ticket"} { // the EventMeta is internal
		if f := fields.ByName(protoreflect.Name(name)); f != nil {
			r.Clear(f)
		}
	}
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(rest)
	if err != nil {
		return nil, err
	}
	data := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &data); err != nil {
		return nil, err
	}
	if data["ticket"], err = json.Marshal(wire.TicketOf(holder.GetTicket())); err != nil {
		return nil, err
	}
	return json.Marshal(data)
}

// invocationEvents maps the TESTING event types exposed to webhooks to
// their public names.
var invocationEvents = map[string]string{
	events.TypeInvocationCompleted: "test_invocation_completed",
	events.TypeInvocationCancelled: "test_invocation_cancelled",
}

// IsInvocationEvent reports whether a TESTING event of type typ reaches
// webhooks.
func IsInvocationEvent(typ string) bool { _, ok := invocationEvents[typ]; return ok }

// InvocationFanout is the fan-out of an invocation's completion or
// cancellation, with its summary as data. ok is false for any other
// event.
func InvocationFanout(typ string, msg proto.Message, s Stored) (e FanoutEvent, ok bool) {
	name, ok := invocationEvents[typ]
	if !ok {
		return FanoutEvent{}, false
	}
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
		return FanoutEvent{}, false
	}
	at := s.At
	if ms := events.MetaOf(msg).GetOccurredAtUnixMs(); ms > 0 {
		at = time.UnixMilli(ms)
	}
	return FanoutEvent{WorkspaceID: inv.GetWorkspaceId(), Name: name, ID: s.EventID, StoredAt: s.At, Traceparent: s.Traceparent, Body: func() ([]byte, error) {
		data, err := json.Marshal(invocationData(inv))
		if err != nil {
			return nil, err
		}
		return json.Marshal(wire.Envelope{Event: name, Timestamp: wire.FormatTimestamp(at), Data: data})
	}}, true
}

func invocationData(inv *testingv1.Invocation) domain.InvocationData {
	// Its runs, as its GET and the listing count them: each test
	// repeat_count times. Jobs count every attempt, resubmissions too.
	runs := int64(len(inv.GetTests())) * int64(max(inv.GetRepeatCount(), 1))
	if l := inv.GetLoad(); l != nil {
		runs = int64(len(l.GetSteps())) // a load test has no runs: its counts are its steps'
	}
	return domain.InvocationData{
		InvocationID: inv.GetInvocationId(), AgentID: inv.GetAgentId(), AgentName: inv.GetAgentName(), BranchID: inv.GetBranchId(),
		FolderID: inv.GetFolderId(), Title: inv.GetTitle(), Status: inv.GetStatus(), RepeatCount: inv.GetRepeatCount(),
		TestRunCount: runs, PassedCount: inv.GetPassedCount(), FailedCount: inv.GetFailedCount(),
		RanByUserEmail: inv.GetRanByUserEmail(), CreatedAtUnixSecs: inv.GetCreatedAtUnix(),
		CompletedAtUnixSecs: inv.CompletedAtUnix, CancelledAtUnixSecs: inv.CancelledAtUnix,
	}
}
