package domain_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"

	"github.com/voiceai-platform/voiceai/services/testing/domain"
)

// A result whose texts are not UTF-8 (an endpoint streamed any bytes)
// becomes storable: proto refused to encode it, and the run was run
// again on every redelivery.
func TestAResultWithBytesThatAreNotUTF8IsMadeStorable(t *testing.T) {
	res := &testingv1.RunResult{RunId: "run_1", RationaleSummary: "called book_table with {\"note\":\"\xff\"}",
		RationaleMessages: []string{"ok \xfe"}, Error: "\xc3", JudgeVotes: []*testingv1.JudgeVote{{Result: "success", Summary: "\xff"}}}
	if _, err := proto.Marshal(res); err == nil {
		t.Fatal("the fixture encodes already: it tests nothing")
	}
	if domain.FitRunResult(res) {
		t.Fatal("a small result was cut")
	}
	if _, err := proto.Marshal(res); err != nil {
		t.Fatal(err)
	}
}

// A result past the bound keeps every message with its text cut, and,
// when that is not enough, the first and last messages with one in place
// of those between, saying how many; the transcript stays a JSON array of
// messages.
func TestAResultPastTheBoundIsCutToFit(t *testing.T) {
	for _, c := range []struct {
		name      string
		messages  int
		text      int
		wantCount int // messages kept, the marker included; 0: all
	}{
		{"a few huge answers", 3, 900 << 10, 0},
		{"a very long conversation", 600, 3 << 10, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var msgs []map[string]any
			for i := range c.messages {
				msgs = append(msgs, map[string]any{"role": "agent", "message": fmt.Sprint(i, " ", strings.Repeat("<é", c.text/3)), "time_in_call_secs": i})
			}
			transcript, _ := json.Marshal(msgs)
			res := &testingv1.RunResult{RunId: "run_1", AgentResponsesJson: transcript, RationaleSummary: strings.Repeat("why ", 100_000)}
			if !domain.FitRunResult(res) {
				t.Fatal("nothing cut")
			}
			if size := proto.Size(res); size > domain.MaxRunResultBytes {
				t.Fatalf("%d bytes; want at most %d", size, domain.MaxRunResultBytes)
			}
			var kept []struct {
				Message string `json:"message"`
			}
			if err := json.Unmarshal(res.AgentResponsesJson, &kept); err != nil {
				t.Fatal(err)
			}
			if !utf8.ValidString(res.RationaleSummary) || !strings.Contains(res.RationaleSummary, "bytes cut") {
				t.Fatalf("rationale: %.80s…", res.RationaleSummary)
			}
			switch c.wantCount {
			case 0:
				if len(kept) != c.messages || !strings.Contains(kept[0].Message, "bytes cut") {
					t.Fatalf("%d messages kept; want all %d, cut", len(kept), c.messages)
				}
			default:
				first, last := kept[0].Message, kept[len(kept)-1].Message
				var marked bool
				for _, m := range kept {
					marked = marked || strings.Contains(m.Message, "messages cut")
				}
				if !strings.HasPrefix(first, "0 ") || !strings.HasPrefix(last, fmt.Sprint(c.messages-1, " ")) || !marked {
					t.Fatalf("kept %d messages, first %.10q, last %.10q, marked %v", len(kept), first, last, marked)
				}
			}
		})
	}
}
