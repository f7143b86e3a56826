package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/services/testing/offline"
)

// An agent's streaming endpoint: its turn is timed whole and to its first
// token, the wait for the first chunk is not a stall, and a bad stream
// fails the turn naming the fault, with the key redacted from it.
func TestStreamingEndpointTurns(t *testing.T) {
	t.Setenv("TEAM_KEY", "sk-team-streaming-0123")
	srv := llmtest.NewServer(llmtest.Fixed(0, "we open at nine"))
	defer srv.Close()
	srv.SetStream(&llmtest.Stream{First: 150 * time.Millisecond, Gap: 20 * time.Millisecond})
	e := endpoints()
	e.IdleTimeout = 100 * time.Millisecond
	cfg := ParseAgentConfig([]byte(`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{"url":"` + srv.URL +
		`","model_id":"team","api_key":{"env_var_label":"TEAM_KEY"}}}}}`))
	m, err := e.For(context.Background(), "ws_1", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &roles{agent: m, judge: offline.Model{}}
	turn, _, err := r.Respond(context.Background(), Conversation{Turns: []Turn{{Role: "user", Text: "hours?"}}})
	if err != nil || turn.Text != "we open at nine" {
		t.Fatalf("%+v %v", turn, err)
	}
	_, timings := r.record()
	// role chunk at 150ms, "we" 20ms later, three more words, the end and usage chunks, [DONE]
	if len(timings) != 1 || timings[0].FirstToken < 170*time.Millisecond || timings[0].FirstToken > 250*time.Millisecond ||
		timings[0].Response < 150*time.Millisecond+7*20*time.Millisecond || timings[0].Response <= timings[0].FirstToken {
		t.Fatalf("timings %+v", timings)
	}
	if !srv.Requests()[0].Stream {
		t.Fatal("the endpoint was not asked to stream")
	}

	srv.SetStream(&llmtest.Stream{ErrorAfter: 2, ErrorMessage: "quota for sk-team-streaming-0123 is gone"})
	_, _, err = r.Respond(context.Background(), Conversation{Turns: []Turn{{Role: "user", Text: "again"}}})
	if err == nil || !IsEndpointError(err) || err.Error() != "agent endpoint stream: error event: quota for "+RedactedSecret+" is gone" {
		t.Fatalf("%v", err)
	}
	srv.SetStream(&llmtest.Stream{StallAfter: 2})
	_, _, err = r.Respond(context.Background(), Conversation{Turns: []Turn{{Role: "user", Text: "and again"}}})
	if err == nil || !strings.HasPrefix(err.Error(), "agent endpoint stream: stalled 100ms after 2 chunks") {
		t.Fatalf("%v", err)
	}
}

// The offline model (and any answer read whole) has its whole time as its
// first token.
func TestWholeAnswerFirstTokenIsItsTime(t *testing.T) {
	r := &roles{agent: offline.Model{}, judge: offline.Model{}}
	if _, _, err := r.Respond(context.Background(), Conversation{Turns: []Turn{{Role: "user", Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	_, timings := r.record()
	if len(timings) != 1 || timings[0].FirstToken != timings[0].Response {
		t.Fatalf("%+v", timings)
	}
}
