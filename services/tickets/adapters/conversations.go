package adapters

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// conversationEvent is what a conversation_started or conversation_ended
// event says of its conversation. Beyond the spec's fields, a
// conversation_ended may hand over the call's outcome, its duration, its
// analysis and its transcript (our extension, in the public shapes).
type conversationEvent struct {
	Name           string
	WorkspaceID    string
	At             time.Time
	ConversationID string          `json:"conversation_id"`
	AgentID        string          `json:"agent_id"`
	TurnCount      *int            `json:"turn_count"`
	CallSuccessful string          `json:"call_successful"`
	DurationSecs   *int64          `json:"call_duration_secs"`
	Transcript     json.RawMessage `json:"transcript"`
	RawAnalysis    json.RawMessage `json:"analysis"`
	// Sealed is the transcript as the API writes it to the stream,
	// sealed under the conversation's key (pkg/convseal), with its turn
	// count; only a holder of the keys opens it (openSealed).
	Sealed      string          `json:"transcript_sealed"`
	SealedTurns *int            `json:"transcript_turns"`
	analysis    analysis        // RawAnalysis, when in the public shape
	turns       int             // how many turns the transcript holds; 0 when it is absent or refused
	shape       transcriptShape // what the listing filters read of it
}

// analysis is the public conversation analysis, as far as listings filter
// on it.
type analysis struct {
	Evaluations map[string]struct {
		Result string `json:"result"`
	} `json:"evaluation_criteria_results"`
	DataCollection map[string]struct {
		Value json.RawMessage `json:"value"`
	} `json:"data_collection_results"`
	Summary string `json:"transcript_summary"`
}

// transcriptShape is what listings filter on in a transcript.
type transcriptShape struct {
	words, tools, errored []string
}

// maxTranscriptTurns bounds a handed-over transcript, as the API's
// conversation_ended schema does.
const maxTranscriptTurns = convseal.MaxTurns

// parseConversationEvent reads a platform record; ok is false for any
// other event, or one whose ids could never be asked for (producers other
// than the gateway publish on the stream).
func parseConversationEvent(rec eventstore.Record) (ev conversationEvent, ok bool) {
	var env wire.Envelope
	if json.Unmarshal(rec.Data, &env) != nil || (env.Event != "conversation_started" && env.Event != "conversation_ended" && env.Event != ConversationDeletedEvent) {
		return ev, false
	}
	if json.Unmarshal(env.Data, &ev) != nil {
		return ev, false
	}
	// An analysis of another shape (a producer on the bus) is dropped, not
	// the event.
	if len(ev.RawAnalysis) > 0 && json.Unmarshal(ev.RawAnalysis, &ev.analysis) != nil {
		ev.analysis = analysis{}
	}
	if !ids.Valid(ev.ConversationID) || (ev.AgentID != "" && !ids.Valid(ev.AgentID)) {
		return ev, false
	}
	ws, _, ok := events.ParsePlatformSubject(rec.Subject)
	if !ok {
		return ev, false
	}
	ev.Name, ev.WorkspaceID, ev.At = env.Event, ws, env.At(rec.Time)
	if !slices.Contains(app.CallOutcomes, ev.CallSuccessful) {
		ev.CallSuccessful = ""
	}
	// A transcript published straight on the subject has not been
	// through the API's edge: the same value rules hold (a number beyond
	// a float64 or a lone surrogate would be served back as no reader
	// can parse it), and a transcript that breaks them is not kept.
	if len(ev.Transcript) > 0 {
		checked, err := apperr.CheckJSONValues(ev.Transcript, "transcript")
		if err != nil {
			checked = nil
		}
		ev.Transcript = checked
	}
	ev.turns, ev.shape = readTranscript(ev.Transcript)
	if ev.turns == 0 {
		ev.Transcript = nil
	}
	if ev.Transcript == nil && ev.Sealed != "" && ev.SealedTurns != nil {
		ev.turns = min(max(*ev.SealedTurns, 0), maxTranscriptTurns)
	}
	return ev, true
}

// openSealed reads what the listing filters need (its words, the tools
// it called) from a sealed transcript, with the conversation's key; the
// transcript itself is not kept. Without keys, or once the key is
// destroyed (a deleted conversation), it reads nothing.
func (ev *conversationEvent) openSealed(ctx context.Context, keys convseal.Keys) {
	if keys == nil || ev.Sealed == "" || ev.Transcript != nil {
		return
	}
	turns, err := convseal.OpenTranscript(ctx, keys, ev.WorkspaceID, ev.ConversationID, ev.Sealed)
	if err != nil {
		return
	}
	if n, shape := readTranscript(turns); n > 0 {
		ev.turns, ev.shape = n, shape
	}
}

// countTurns is the number of turns of a transcript in the public shape,
// or 0 when it is not one.
func countTurns(raw json.RawMessage) int {
	n, _ := readTranscript(raw)
	return n
}

// summaryEvent is what the read models apply.
func (ev conversationEvent) summaryEvent() app.ConversationEvent {
	out := app.ConversationEvent{
		Name: ev.Name, WorkspaceID: ev.WorkspaceID, ConversationID: ev.ConversationID, AgentID: ev.AgentID,
		AtMs: ev.At.UnixMilli(), TurnCount: ev.TurnCount, CallSuccessful: ev.CallSuccessful, DurationSecs: ev.DurationSecs,
		Turns: ev.turns, Summary: ev.analysis.Summary,
		ToolNames: ev.shape.tools, ToolsErrored: ev.shape.errored, Words: ev.shape.words,
	}
	for id, e := range ev.analysis.Evaluations {
		if slices.Contains(app.CallOutcomes, e.Result) {
			if out.Evaluations == nil {
				out.Evaluations = map[string]string{}
			}
			out.Evaluations[id] = e.Result
		}
	}
	for id, d := range ev.analysis.DataCollection {
		if v, ok := dataValue(d.Value); ok {
			if out.DataCollection == nil {
				out.DataCollection = map[string]string{}
			}
			out.DataCollection[id] = v
		}
	}
	return out
}

// dataValue is a collected value as data_collection_params compare it: a
// string as itself, a number or boolean as its JSON text, anything else
// as its compact JSON; null (or nothing) was not collected.
func dataValue(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		return "", false
	}
	return compact.String(), true
}

// readTranscript is the number of turns of a transcript in the public
// shape (a JSON array of objects, each with its role), or 0 when it is
// not one, and what listings filter on: the words of its messages, the
// tools it called and those whose result was an error.
func readTranscript(raw json.RawMessage) (int, transcriptShape) {
	var shape transcriptShape
	if len(raw) == 0 {
		return 0, shape
	}
	var turns []struct {
		Role      string `json:"role"`
		Message   any    `json:"message"`
		ToolCalls []struct {
			ToolName string `json:"tool_name"`
		} `json:"tool_calls"`
		ToolResults []struct {
			ToolName string `json:"tool_name"`
			IsError  bool   `json:"is_error"`
		} `json:"tool_results"`
	}
	if json.Unmarshal(raw, &turns) != nil || len(turns) > maxTranscriptTurns {
		return 0, shape
	}
	var text strings.Builder
	for _, t := range turns {
		if t.Role == "" {
			return 0, transcriptShape{}
		}
		if m, ok := t.Message.(string); ok {
			text.WriteString(m)
			text.WriteByte(' ')
		}
		for _, c := range t.ToolCalls {
			if c.ToolName != "" {
				shape.tools = append(shape.tools, c.ToolName)
			}
		}
		for _, r := range t.ToolResults {
			if r.ToolName != "" && r.IsError {
				shape.errored = append(shape.errored, r.ToolName)
			}
		}
	}
	shape.words = app.SearchWords(text.String())
	slices.Sort(shape.tools)
	slices.Sort(shape.errored)
	shape.tools, shape.errored = slices.Compact(shape.tools), slices.Compact(shape.errored)
	return len(turns), shape
}
