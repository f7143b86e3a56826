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

// silent answers every turn with nothing.
type silent struct{ offline.Model }

func (silent) Respond(context.Context, model.Conversation) (model.Turn, model.Usage, error) {
	return model.Turn{Role: "agent", Text: " "}, model.Usage{}, nil
}

// A turn that said nothing came with no first token: it is not timed, so
// a dead agent does not read as a fast one.
func TestAnEmptyTurnIsNotTimed(t *testing.T) {
	r := &roles{agent: silent{}, judge: offline.Model{}}
	if _, _, err := r.Respond(context.Background(), model.Conversation{Turns: []model.Turn{{Role: "user", Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if _, timings := r.record(); len(timings) != 0 {
		t.Fatalf("an empty turn timed: %+v", timings)
	}
}
