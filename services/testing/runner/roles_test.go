package runner

import (
	"context"
	"testing"

	"github.com/voiceai-platform/voiceai/services/testing/model"
	"github.com/voiceai-platform/voiceai/services/testing/offline"
)

// The offline model (and any answer read whole) has its whole time as its
// first token.
func TestWholeAnswerFirstTokenIsItsTime(t *testing.T) {
	r := &roles{agent: offline.Model{}, judge: offline.Model{}}
	if _, _, err := r.Respond(context.Background(), model.Conversation{Turns: []model.Turn{{Role: "user", Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	_, timings := r.record()
	if len(timings) != 1 || timings[0].FirstToken != timings[0].Response {
		t.Fatalf("%+v", timings)
	}
}
