package adapters

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"sync"
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
	Sealed sealedBytes `json:"transcript_sealed"`
	// SealedAnalysis is the analysis sealed the same way (its plaintext
	// the public shape, RawAnalysis once opened).
	SealedAnalysis sealedBytes `json:"analysis_sealed"`
	SealedTurns    *int        `json:"transcript_turns"`
	analysis       analysis    // RawAnalysis, when in the public shape
	// analysisParsed says RawAnalysis is in the public shape.
	analysisParsed bool
	deletedBy      app.Deleter     // a deletion's command, from its record's headers
	turns          int             // how many turns the transcript holds; 0 when it is absent or refused
	shape          transcriptShape // what the listing filters read of it
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

// sealedBytes is transcript_sealed read straight into its bytes: the
// JSON decoder decodes its base64 once, where a string was kept and then
// decoded into a second copy. set is false when there is none (absent,
// null or ""); a string that is no base64 is set with no bytes, which no
// key opens, as a tampered one.
type sealedBytes struct {
	b   []byte
	set bool
}

func (s *sealedBytes) UnmarshalJSON(raw []byte) error {
	// The usual case, a string with no escapes (base64 has none), is
	// decoded here: the decoder has checked the JSON already.
	if n := len(raw); n >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		text := raw[1 : n-1]
		s.b = make([]byte, base64.StdEncoding.DecodedLen(len(text)))
		if k, err := base64.StdEncoding.Decode(s.b, text); err == nil {
			s.b = s.b[:k]
		} else {
			s.b = nil
		}
		s.set = len(text) > 0
		return nil
	}
	var text string
	if err := json.Unmarshal(raw, &s.b); err != nil {
		if json.Unmarshal(raw, &text) != nil {
			return err // not a string: the event does not parse
		}
		s.b = nil
	}
	s.set = string(raw) != "null" && string(raw) != `""`
	return nil
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
	// The envelope and its data in one pass: the data is not copied out
	// of the record first.
	var env struct {
		Event     string             `json:"event"`
		Timestamp string             `json:"timestamp"`
		Data      *conversationEvent `json:"data"`
	}
	env.Data = &ev
	if json.Unmarshal(rec.Data, &env) != nil || env.Data == nil ||
		(env.Event != "conversation_started" && env.Event != "conversation_ended" && env.Event != ConversationDeletedEvent) {
		return conversationEvent{}, false
	}
	// An analysis of another shape (a producer on the bus) is dropped, not
	// the event.
	ev.setAnalysis(ev.RawAnalysis)
	if !ids.Valid(ev.ConversationID) || (ev.AgentID != "" && !ids.Valid(ev.AgentID)) {
		return ev, false
	}
	ws, _, ok := events.ParsePlatformSubject(rec.Subject)
	if !ok {
		return ev, false
	}
	ev.Name, ev.WorkspaceID, ev.At = env.Event, ws, wire.Envelope{Timestamp: env.Timestamp}.At(rec.Time)
	if ev.Name == ConversationDeletedEvent {
		ev.deletedBy = app.Deleter{CommandID: rec.Header.Get(events.HeaderCommandID), RequestDigest: rec.Header.Get(events.HeaderRequestDigest)}
	}
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
	if ev.Transcript == nil && ev.Sealed.set && ev.SealedTurns != nil {
		ev.turns = min(max(*ev.SealedTurns, 0), maxTranscriptTurns)
	}
	return ev, true
}

// setAnalysis keeps raw as the event's analysis; one of another shape (a
// producer on the bus) is dropped, not the event.
func (ev *conversationEvent) setAnalysis(raw json.RawMessage) {
	ev.RawAnalysis, ev.analysis, ev.analysisParsed = raw, analysis{}, false
	if len(raw) > 0 {
		if ev.analysisParsed = json.Unmarshal(raw, &ev.analysis) == nil; !ev.analysisParsed {
			ev.analysis = analysis{}
		}
	}
}

// openSealed reads what the listing filters need (its words, the tools
// it called) from a sealed transcript, with the conversation's key; the
// transcript itself is not kept. Without keys, or once the key is
// destroyed (a deleted conversation), it reads nothing.
func (ev *conversationEvent) openSealed(ctx context.Context, keys convseal.Keys) {
	if keys == nil {
		return
	}
	ev.openAnalysis(ctx, keys)
	if !ev.Sealed.set || ev.Transcript != nil {
		return
	}
	turns, err := ev.Sealed.open(ctx, keys, ev.WorkspaceID, ev.ConversationID)
	if err != nil {
		return
	}
	if n, shape := readTranscript(turns); n > 0 {
		ev.turns, ev.shape = n, shape
	}
}

// openAnalysis reads a sealed analysis with the conversation's key. When
// it cannot (the key destroyed: ErrShredded; the bytes changed or
// another's), the event has none, and the error says why.
func (ev *conversationEvent) openAnalysis(ctx context.Context, keys convseal.Keys) error {
	if !ev.SealedAnalysis.set || ev.RawAnalysis != nil {
		return nil
	}
	plain, err := convseal.OpenAs(ctx, keys, convseal.KindReportedAnalysis, ev.WorkspaceID, ev.ConversationID, ev.SealedAnalysis.b)
	if err == nil {
		ev.setAnalysis(plain)
	}
	return err
}

// open opens the sealed transcript once: it is decrypted in place, so its
// bytes are the transcript's afterwards, and a second open is refused.
func (s *sealedBytes) open(ctx context.Context, keys convseal.Keys, workspaceID, conversationID string) (json.RawMessage, error) {
	b := s.b
	s.b = nil
	if b == nil {
		if _, err := keys.Key(ctx, workspaceID, conversationID, false); err != nil {
			return nil, err
		}
		return nil, convseal.ErrTampered
	}
	return convseal.OpenTranscriptInPlace(ctx, keys, workspaceID, conversationID, b)
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
		ToolNames: ev.shape.tools, ToolsErrored: ev.shape.errored, Words: ev.shape.words, DeletedBy: ev.deletedBy,
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
	r := transcriptReaders.Get().(*transcriptReader)
	defer r.release()
	if json.Unmarshal(raw, &r.turns) != nil || len(r.turns) > maxTranscriptTurns {
		return 0, shape
	}
	for _, t := range r.turns {
		if t.Role == "" {
			return 0, transcriptShape{}
		}
		if m, ok := t.Message.(string); ok {
			r.words.Add(m)
		}
		for _, c := range t.ToolCalls {
			if c.ToolName != "" {
				shape.tools = append(shape.tools, c.ToolName)
			}
		}
		for _, res := range t.ToolResults {
			if res.ToolName != "" && res.IsError {
				shape.errored = append(shape.errored, res.ToolName)
			}
		}
	}
	shape.words = r.words.Sorted()
	slices.Sort(shape.tools)
	slices.Sort(shape.errored)
	shape.tools, shape.errored = slices.Compact(shape.tools), slices.Compact(shape.errored)
	return len(r.turns), shape
}

// transcriptReader is what readTranscript reads a transcript into,
// reused: a replay reads tens of thousands in a row, and the turns' slice
// grown afresh for each, with the words' buffers, was garbage the
// collector chased through an index of a million conversations.
type transcriptReader struct {
	turns []transcriptTurn
	words app.Words
}

type transcriptTurn struct {
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

var transcriptReaders = sync.Pool{New: func() any { return new(transcriptReader) }}

// release empties r, holding on to none of the transcript's values, and
// returns it to the pool.
func (r *transcriptReader) release() {
	clear(r.turns)
	r.turns = r.turns[:0]
	r.words.Reset()
	transcriptReaders.Put(r)
}
