package offline

import (
	"context"
	"fmt"
	"testing"

	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// BenchmarkOfflineRun is one run of the offline model: the agent's
// answer and the judge's verdict, the same test again and again (as the
// repeats of an invocation are).
func BenchmarkOfflineRun(b *testing.B) {
	conv := model.Conversation{SystemPrompt: hoursPrompt, Tools: []model.Tool{bookTable}, Turns: []model.Turn{userTurn("What are your opening hours?")}}
	for b.Loop() {
		turn, _, err := Model{}.Respond(context.Background(), conv)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := (Model{}).Judge(context.Background(), model.JudgeInput{Conditions: []string{"The agent states the opening hours nine to five"}, Transcript: conv.Turns, Reply: turn}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOfflineRunCold: every run another question and reply, so no
// memo answers.
func BenchmarkOfflineRunCold(b *testing.B) {
	i := 0
	for b.Loop() {
		i++
		conv := model.Conversation{SystemPrompt: hoursPrompt, Tools: []model.Tool{bookTable}, Turns: []model.Turn{userTurn(fmt.Sprintf("What are your opening hours on day %d?", i))}}
		turn, _, err := Model{}.Respond(context.Background(), conv)
		if err != nil {
			b.Fatal(err)
		}
		turn.Text += fmt.Sprint(i)
		if _, _, err := (Model{}).Judge(context.Background(), model.JudgeInput{Conditions: []string{"The agent states the opening hours nine to five"}, Transcript: conv.Turns, Reply: turn}); err != nil {
			b.Fatal(err)
		}
	}
}
