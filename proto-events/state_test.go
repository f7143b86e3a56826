package events_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"
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
