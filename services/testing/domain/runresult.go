package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	testingv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/testing/v1"
)

// MaxRunResultBytes bounds a run's stored result. What an agent endpoint
// or a judge says is not ours to bound (an endpoint may answer a megabyte
// a turn), and a result the event log cannot take would be run again on
// every redelivery, each time calling the endpoint and the judge anew.
const MaxRunResultBytes = 1 << 20

// maxFreeText bounds each rationale and error of a result cut to fit.
const maxFreeText = 4 << 10

// FitRunResult makes res storable: every text valid UTF-8 (an endpoint
// may stream any bytes), and, past MaxRunResultBytes, its rationales and
// error cut to maxFreeText and its transcript to the messages that fit,
// first and last kept, a message in their place saying how many were
// cut. It reports whether it cut anything.
func FitRunResult(res *testingv1.RunResult) (cut bool) {
	eachText(res, func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") })
	if !utf8.Valid(res.AgentResponsesJson) {
		res.AgentResponsesJson = bytes.ToValidUTF8(res.AgentResponsesJson, []byte("\uFFFD"))
	}
	if proto.Size(res) <= MaxRunResultBytes {
		return false
	}
	eachText(res, cutText)
	if over := proto.Size(res) - MaxRunResultBytes; over > 0 {
		res.AgentResponsesJson = cutTranscript(res.AgentResponsesJson, len(res.AgentResponsesJson)-over)
	}
	return true
}

// eachText replaces each free text of res (its error and rationales) by
// what f makes of it.
func eachText(res *testingv1.RunResult, f func(string) string) {
	res.Error, res.RationaleSummary = f(res.Error), f(res.RationaleSummary)
	for i, m := range res.RationaleMessages {
		res.RationaleMessages[i] = f(m)
	}
	for _, v := range res.JudgeVotes {
		v.Summary = f(v.Summary)
	}
}

// cutText is s cut to maxFreeText bytes (on a rune boundary), marked.
func cutText(s string) string {
	if len(s) <= maxFreeText {
		return s
	}
	end := maxFreeText
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + fmt.Sprintf(" … [%d bytes cut: a run's result is bounded to %d]", len(s)-end, MaxRunResultBytes)
}

// cutTranscript cuts, of a JSON array of transcript messages, each one's
// text to maxFreeText, then, if they still pass budget bytes, keeps the
// first and last that fit, a message in place of the others; an array
// that is not one is replaced by that message alone.
func cutTranscript(transcript []byte, budget int) []byte {
	var msgs []json.RawMessage
	if json.Unmarshal(transcript, &msgs) != nil {
		msgs = nil
	}
	total := 2
	for i, m := range msgs {
		msgs[i] = cutMessage(m)
		total += len(msgs[i]) + 1
	}
	if total <= budget {
		return TranscriptJSON(msgs)
	}
	marker := func(n int) json.RawMessage {
		return TranscriptJSON(map[string]any{"role": "agent", "message": fmt.Sprintf("[%d messages cut: a run's result is bounded to %d bytes]", n, MaxRunResultBytes),
			"time_in_call_secs": 0, "tool_calls": []any{}, "source_medium": "text"})
	}
	budget -= len(marker(len(msgs))) + 2
	var head, tail []json.RawMessage
	for i, j := 0, len(msgs)-1; i <= j; {
		took := false
		if len(msgs[i])+1 <= budget {
			head, budget, took = append(head, msgs[i]), budget-len(msgs[i])-1, true
			i++
		}
		if i <= j && len(msgs[j])+1 <= budget {
			tail, budget, took = append(tail, msgs[j]), budget-len(msgs[j])-1, true
			j--
		}
		if !took {
			break
		}
	}
	kept := append(head, marker(len(msgs)-len(head)-len(tail)))
	for i := len(tail) - 1; i >= 0; i-- {
		kept = append(kept, tail[i])
	}
	return TranscriptJSON(kept)
}

// cutMessage is a transcript message with its text cut to maxFreeText.
func cutMessage(m json.RawMessage) json.RawMessage {
	if len(m) <= maxFreeText {
		return m
	}
	var fields map[string]json.RawMessage
	var text string
	if json.Unmarshal(m, &fields) != nil || json.Unmarshal(fields["message"], &text) != nil || len(text) <= maxFreeText {
		return m
	}
	fields["message"] = TranscriptJSON(cutText(text))
	return TranscriptJSON(fields)
}

// TranscriptJSON encodes transcript messages as stored: without the
// HTML escapes encoding/json writes by default (a "<" is 6 bytes then),
// which nothing that reads a transcript needs.
func TranscriptJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return []byte("[]")
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
