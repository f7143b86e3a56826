package esproto

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	agentsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/agents/v1"

	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/memlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

func TestAppendDecodeLast(t *testing.T) {
	ctx := principal.With(context.Background(), principal.Principal{WorkspaceID: "ws", UserID: "sa_1"})
	st := memlog.New()
	subject, _ := events.AgentSubject("ws", "agent_1")
	meta := Meta(ctx, "ws", "cmd-1", time.Unix(100, 0))
	if meta.GetActorUserId() != "sa_1" || meta.GetEventId() == "" || meta.GetOccurredAtUnixMs() != 100_000 {
		t.Fatalf("meta: %v", meta)
	}
	ev := &agentsv1.AgentCreated{Meta: meta, Agent: &agentsv1.Agent{AgentId: "agent_1", WorkspaceId: "ws", Name: "A"}}
	res, err := Append(ctx, st, subject, 0, meta, ev)
	if err != nil || res.Duplicate {
		t.Fatalf("append: %+v %v", res, err)
	}
	msg, seq, found, err := Last(ctx, st, subject)
	if err != nil || !found || seq != res.Seq || !proto.Equal(msg, ev) {
		t.Fatalf("last: %v %d %v %v", msg, seq, found, err)
	}
	rec, _, _ := st.Last(ctx, subject)
	if rec.Type != events.TypeAgentCreated || rec.Workspace != "ws" || rec.CommandID != "cmd-1" || rec.EventID != meta.GetEventId() {
		t.Fatalf("record: %+v", rec)
	}
	if e, err := Encode(ctx, meta, ev); err != nil || e.Schema != "voiceai.agents.v1.AgentCreated" || e.SchemaVersion != events.SchemaVersion {
		t.Fatalf("encoded: %+v %v", e, err)
	}
	if _, err := Decode(eventlog.Record{Type: "nope"}); err == nil {
		t.Fatal("unknown type decoded")
	}
	if once, again := StableID("ws", "c"), StableID("ws", "c"); once != again || once == StableID("ws2", "c") {
		t.Fatal("StableID must be deterministic and scoped")
	}
}
