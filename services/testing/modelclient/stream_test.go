package modelclient

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// An agent's streaming endpoint: its turn is timed whole and to its first
// token, the wait for the first chunk is not a stall, and a bad stream
// fails the turn naming the fault, with the key redacted from it.
func TestStreamingEndpointTurns(t *testing.T) {
	t.Setenv("TEAM_KEY", "sk-team-streaming-0123")
	srv := llmtest.NewServer(llmtest.Fixed(0, "we open at nine"))
	defer srv.Close()
	// Chunks 100 ms apart: a loaded machine's delays stay within one.
	srv.SetStream(&llmtest.Stream{First: 150 * time.Millisecond, Gap: 100 * time.Millisecond})
	e := endpoints()
	e.IdleTimeout = 300 * time.Millisecond
	cfg := model.ParseAgentConfig([]byte(`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{"url":"` + srv.URL +
		`","model_id":"team","api_key":{"env_var_label":"TEAM_KEY"}}}}}`))
	m, err := e.For(context.Background(), "ws_1", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, clock := model.WithTurnClock(context.Background())
	start := time.Now()
	turn, _, err := m.Respond(ctx, model.Conversation{Turns: []model.Turn{{Role: "user", Text: "hours?"}}})
	took := time.Since(start)
	if err != nil || turn.Text != "we open at nine" {
		t.Fatalf("%+v %v", turn, err)
	}
	// role chunk at 150ms, "we" 100ms later (the first token, before the
	// next word at 350ms), three more words, the end and usage chunks, [DONE]
	first := clock.FirstToken.Sub(start)
	if clock.FirstToken.IsZero() || first < 240*time.Millisecond || first >= 350*time.Millisecond ||
		took < 150*time.Millisecond+7*100*time.Millisecond || took <= first {
		t.Fatalf("first token after %s, whole turn %s", first, took)
	}
	if !srv.Requests()[0].Stream {
		t.Fatal("the endpoint was not asked to stream")
	}

	srv.SetStream(&llmtest.Stream{ErrorAfter: 2, ErrorMessage: "quota for sk-team-streaming-0123 is gone"})
	_, _, err = m.Respond(context.Background(), model.Conversation{Turns: []model.Turn{{Role: "user", Text: "again"}}})
	if err == nil || !model.IsEndpointError(err) || err.Error() != "agent endpoint stream: error event: quota for "+RedactedSecret+" is gone" {
		t.Fatalf("%v", err)
	}
	srv.SetStream(&llmtest.Stream{StallAfter: 2})
	_, _, err = m.Respond(context.Background(), model.Conversation{Turns: []model.Turn{{Role: "user", Text: "and again"}}})
	if err == nil || !strings.HasPrefix(err.Error(), "agent endpoint stream: stalled 300ms after 2 chunks") {
		t.Fatalf("%v", err)
	}
}
