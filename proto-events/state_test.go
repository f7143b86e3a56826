package events_test

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"
)

func TestStateOfFindsTheCarriedAggregate(t *testing.T) {
	agent := &agentsv1.Agent{AgentId: "agent_1"}
	for _, ev := range []proto.Message{&agentsv1.AgentCreated{Agent: agent}, &agentsv1.AgentUpdated{Agent: agent}, &agentsv1.AgentDeleted{Agent: agent}} {
		got, ok := events.StateOf[*agentsv1.Agent](ev)
		if !ok || got.GetAgentId() != "agent_1" {
			t.Errorf("%T: %v %v, want agent_1", ev, got, ok)
		}
	}
	for _, ev := range []proto.Message{
		&agentsv1.SecretCreated{Secret: &agentsv1.WorkspaceSecret{SecretId: "s"}}, // another aggregate
		&ticketsv1.TicketCreated{Ticket: &ticketsv1.Ticket{TicketId: "t"}},        // another stream
		&agentsv1.AgentCreated{}, // carries nothing
		nil,
	} {
		if got, ok := events.StateOf[*agentsv1.Agent](ev); ok || got != nil {
			t.Errorf("%T: %v %v, want none", ev, got, ok)
		}
	}
	if k, ok := events.StateOf[*identityv1.ApiKey](&identityv1.ApiKeyRevoked{Key: &identityv1.ApiKey{KeyId: "key_1"}}); !ok || k.GetKeyId() != "key_1" {
		t.Errorf("revoked key: %v %v", k, ok)
	}
}

// StateOf is unambiguous only while no event holds two fields of one
// message type: every registered event is checked.
func TestNoEventCarriesTwoStatesOfOneType(t *testing.T) {
	for _, typ := range events.Types() {
		msg, _ := events.New(typ)
		fields := msg.ProtoReflect().Descriptor().Fields()
		seen := map[protoreflect.FullName]string{}
		for i := range fields.Len() {
			f := fields.Get(i)
			if f.Kind() != protoreflect.MessageKind || f.IsList() || f.IsMap() {
				continue
			}
			if other, dup := seen[f.Message().FullName()]; dup {
				t.Errorf("%s: fields %s and %s are both %s", typ, other, f.Name(), f.Message().FullName())
			}
			seen[f.Message().FullName()] = string(f.Name())
		}
	}
}

// StateBytes reads the state an encoded event carries as StateOf reads
// the decoded one: the same ticket, none where the type carries none,
// an error where the encoding cannot be read field by field.
func TestStateBytesIsStateOfStillEncoded(t *testing.T) {
	ticket := &ticketsv1.Ticket{TicketId: "tkt_1", WorkspaceId: "ws_1", Title: "Refund", Labels: []string{"billing"}}
	ev := &ticketsv1.TicketCreated{Meta: &commonv1.EventMeta{EventId: "evt_1", WorkspaceId: "ws_1"}, Ticket: ticket}
	data, err := proto.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	raw, ok, err := events.StateBytes[*ticketsv1.Ticket](events.TypeOf(ev), data)
	got := &ticketsv1.Ticket{}
	if !ok || err != nil || proto.Unmarshal(raw, got) != nil || !proto.Equal(got, ticket) {
		t.Fatalf("StateBytes: %v %v, decoded %v, want %v", ok, err, got, ticket)
	}
	for what, c := range map[string]struct {
		eventType string
		data      []byte
	}{
		"an event of another aggregate":     {events.TypeOf(&agentsv1.AgentCreated{}), mustMarshal(t, &agentsv1.AgentCreated{Agent: &agentsv1.Agent{AgentId: "agent_1"}})},
		"a ticket event without its ticket": {events.TypeOf(ev), mustMarshal(t, &ticketsv1.TicketCreated{Meta: ev.Meta})},
		"a type this build does not know":   {"ticket.someday", data},
	} {
		if raw, ok, err := events.StateBytes[*ticketsv1.Ticket](c.eventType, c.data); ok || err != nil || raw != nil {
			t.Errorf("%s: %q %v %v, want none", what, raw, ok, err)
		}
	}
	if _, ok, err := events.StateBytes[*ticketsv1.Ticket](events.TypeOf(ev), data[:len(data)-3]); ok || err == nil {
		t.Errorf("a cut encoding: %v %v, want an error", ok, err)
	}
	// A state given in two parts is merged by a decoder: StateBytes says
	// it cannot give it as one.
	twice := append(slices.Clone(data), mustMarshal(t, &ticketsv1.TicketCreated{Ticket: &ticketsv1.Ticket{Status: "open"}})...)
	if _, ok, err := events.StateBytes[*ticketsv1.Ticket](events.TypeOf(ev), twice); ok || err == nil {
		t.Errorf("a state in two parts: %v %v, want an error", ok, err)
	}
}

// FuzzStateBytes: whatever the bytes, StateBytes does not panic, and a
// state it gives is the one the decoded event carries.
func FuzzStateBytes(f *testing.F) {
	ev := &ticketsv1.TicketCreated{Meta: &commonv1.EventMeta{EventId: "evt_1"}, Ticket: &ticketsv1.Ticket{TicketId: "tkt_1", Labels: []string{"a"}}}
	f.Add(mustMarshalF(f, ev))
	f.Add([]byte{0x12, 0x03, 0x0a, 0x01, 'x'})
	f.Fuzz(func(t *testing.T, data []byte) {
		eventType := events.TypeOf(ev)
		raw, ok, err := events.StateBytes[*ticketsv1.Ticket](eventType, data)
		if err != nil || !ok {
			return
		}
		decoded := &ticketsv1.TicketCreated{}
		if proto.Unmarshal(data, decoded) != nil {
			return // a field StateBytes passes over may be malformed
		}
		want, _ := events.StateOf[*ticketsv1.Ticket](decoded)
		got := &ticketsv1.Ticket{}
		if proto.Unmarshal(raw, got) != nil || !proto.Equal(got, want) {
			t.Fatalf("StateBytes gave %v, the decoded event carries %v", got, want)
		}
	})
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustMarshalF(f *testing.F, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		f.Fatal(err)
	}
	return b
}
