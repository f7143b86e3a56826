package runner

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkOfflineRun is one run of the offline model: the agent's
// answer and the judge's verdict, the same test again and again (as the
// repeats of an invocation are).
func BenchmarkOfflineRun(b *testing.B) {
	conv := Conversation{SystemPrompt: hoursPrompt, Tools: []Tool{bookTable}, Turns: []Turn{userTurn("What are your opening hours?")}}
	for b.Loop() {
		turn, _, err := Offline{}.Respond(context.Background(), conv)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := (Offline{}).Judge(context.Background(), JudgeInput{Conditions: []string{"The agent states the opening hours nine to five"}, Transcript: conv.Turns, Reply: turn}); err != nil {
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
		conv := Conversation{SystemPrompt: hoursPrompt, Tools: []Tool{bookTable}, Turns: []Turn{userTurn(fmt.Sprintf("What are your opening hours on day %d?", i))}}
		turn, _, err := Offline{}.Respond(context.Background(), conv)
		if err != nil {
			b.Fatal(err)
		}
		turn.Text += fmt.Sprint(i)
		if _, _, err := (Offline{}).Judge(context.Background(), JudgeInput{Conditions: []string{"The agent states the opening hours nine to five"}, Transcript: conv.Turns, Reply: turn}); err != nil {
			b.Fatal(err)
		}
	}
}
