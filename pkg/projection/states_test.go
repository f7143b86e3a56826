package projection

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

func TestStatesProjectsTheCarriedState(t *testing.T) {
	h := States(func(a *agentsv1.Agent) (string, any) { return a.GetAgentId(), a.GetName() })
	record := func(typ string, m proto.Message) eventstore.Record {
		data, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return eventstore.Record{Type: typ, Data: data, Seq: 7}
	}
	id, doc, err := h(context.Background(), record(events.TypeAgentUpdated, &agentsv1.AgentUpdated{Agent: &agentsv1.Agent{AgentId: "agent_1", Name: "Refunds"}}))
	if err != nil || id != "agent_1" || doc != "Refunds" {
		t.Fatalf("an agent's event: %q %v %v", id, doc, err)
	}
	id, _, err = h(context.Background(), record(events.TypeSecretCreated, &agentsv1.SecretCreated{Secret: &agentsv1.WorkspaceSecret{SecretId: "s"}}))
	if err != nil || id != "" {
		t.Fatalf("another aggregate's event is skipped: %q %v", id, err)
	}
	if _, _, err := h(context.Background(), eventstore.Record{Type: events.TypeAgentCreated, Data: []byte{0xff}}); err == nil {
		t.Fatal("an undecodable record: no error")
	}
}
