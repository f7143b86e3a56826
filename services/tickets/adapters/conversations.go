package adapters

import (
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/google/btree"

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
// conversation_ended may hand over the call's outcome, its duration and
// its transcript (our extension, in the public transcript-turn shape).
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
	// Sealed is the transcript as the API writes it to the stream,
	// sealed under the conversation's key (pkg/convseal), with its
	// turn count; only a transcript reader opens it.
	Sealed      string `json:"transcript_sealed"`
	SealedTurns *int   `json:"transcript_turns"`
	turns       int    // how many turns the transcript holds; 0 when it is absent or refused
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
	if json.Unmarshal(env.Data, &ev) != nil || !ids.Valid(ev.ConversationID) || (ev.AgentID != "" && !ids.Valid(ev.AgentID)) {
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
	ev.turns = countTurns(ev.Transcript)
	if ev.turns == 0 {
		ev.Transcript = nil
	}
	if ev.Transcript == nil && ev.Sealed != "" && ev.SealedTurns != nil {
		ev.turns = min(max(*ev.SealedTurns, 0), maxTranscriptTurns)
	}
	return ev, true
}

// countTurns is the number of turns of a transcript in the public shape,
// or 0 when it is not one (the rule the API's ingest counts by).
func countTurns(raw json.RawMessage) int { return convseal.CountTurns(raw) }

// ConversationIndex holds a summary of every conversation, per workspace
// (and per agent) in listing order, newest first, so a page walks from its
// cursor and stops once it has the page. It is built from the platform
// stream at start and kept live.
type ConversationIndex struct {
	mu     sync.RWMutex
	erased map[string]bool                    // workspace/conversation deleted: never listed again (deletion.go)
	byID   map[string]app.ConversationSummary // workspace/conversation → summary
	spaces map[string]*btree.BTreeG[app.ConversationSummary]
	agents map[string]*btree.BTreeG[app.ConversationSummary] // workspace/agent → its conversations
}

// NewConversationIndex returns an empty index.
func NewConversationIndex() *ConversationIndex {
	return &ConversationIndex{
		byID:   map[string]app.ConversationSummary{},
		spaces: map[string]*btree.BTreeG[app.ConversationSummary]{},
		agents: map[string]*btree.BTreeG[app.ConversationSummary]{},
	}
}

// newestFirst orders a tree so that ascending iteration is the listing.
func newestFirst(a, b app.ConversationSummary) bool { return a.Position().Compare(b.Position()) > 0 }

func (x *ConversationIndex) apply(ev conversationEvent) {
	x.mu.Lock()
	defer x.mu.Unlock()
	key := ev.WorkspaceID + "/" + ev.ConversationID
	if x.erased[key] {
		return
	}
	if ev.Name == ConversationDeletedEvent {
		x.forget(key)
		return
	}
	prev, known := x.byID[key]
	c := prev
	if !known {
		c = app.ConversationSummary{WorkspaceID: ev.WorkspaceID, ConversationID: ev.ConversationID, StartedAtMs: ev.At.UnixMilli(),
			Status: app.ConversationInProgress, CallSuccessful: "unknown"}
	}
	if ev.AgentID != "" {
		c.AgentID = ev.AgentID
	}
	switch ev.Name {
	case "conversation_started":
		// The start, when it arrives after the end, still dates the call.
		c.StartedAtMs = min(c.StartedAtMs, ev.At.UnixMilli())
	case "conversation_ended":
		c.Status, c.EndedAtMs = app.ConversationDone, ev.At.UnixMilli()
		if ev.DurationSecs != nil && *ev.DurationSecs >= 0 {
			c.DurationSecs, c.DurationReported = *ev.DurationSecs, true
		}
		switch {
		case ev.turns > 0:
			c.MessageCount = ev.turns
		case ev.TurnCount != nil && *ev.TurnCount >= 0:
			c.MessageCount = *ev.TurnCount
		}
		if ev.CallSuccessful != "" {
			c.CallSuccessful = ev.CallSuccessful
		}
	}
	if c.EndedAtMs != 0 && !c.DurationReported {
		c.DurationSecs = max(0, (c.EndedAtMs-c.StartedAtMs)/1000)
	}
	if known {
		x.tree(x.spaces, prev.WorkspaceID).Delete(prev)
		if prev.AgentID != "" {
			x.tree(x.agents, prev.WorkspaceID+"/"+prev.AgentID).Delete(prev)
		}
	}
	x.byID[key] = c
	x.tree(x.spaces, c.WorkspaceID).ReplaceOrInsert(c)
	if c.AgentID != "" {
		x.tree(x.agents, c.WorkspaceID+"/"+c.AgentID).ReplaceOrInsert(c)
	}
}

func (x *ConversationIndex) tree(m map[string]*btree.BTreeG[app.ConversationSummary], key string) *btree.BTreeG[app.ConversationSummary] {
	t := m[key]
	if t == nil {
		t = btree.NewG(32, newestFirst)
		m[key] = t
	}
	return t
}

// ConversationSummary looks one conversation up.
func (x *ConversationIndex) ConversationSummary(workspaceID, conversationID string) (app.ConversationSummary, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	c, ok := x.byID[workspaceID+"/"+conversationID]
	return c, ok
}

// ConversationPage walks the workspace's (or the agent's) conversations
// from the cursor, or from the time bound, newest first.
func (x *ConversationIndex) ConversationPage(q app.ConversationQuery) ([]app.ConversationSummary, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	t := x.spaces[q.WorkspaceID]
	if q.AgentID != "" {
		t = x.agents[q.WorkspaceID+"/"+q.AgentID]
	}
	if t == nil {
		return nil, false
	}
	// The walk starts at the cursor or just below the "before" bound,
	// whichever is older, and stops at the "after" bound.
	from := app.ConversationSummary{StartedAtMs: 1 << 62}
	if q.StartedBefore != 0 {
		from.StartedAtMs = q.StartedBefore * 1000
	}
	if q.After != nil && q.After.Compare(from.Position()) < 0 {
		from = app.ConversationSummary{StartedAtMs: q.After.StartedAtMs, ConversationID: q.After.ID}
	}
	var page []app.ConversationSummary
	more := false
	t.AscendGreaterOrEqual(from, func(c app.ConversationSummary) bool {
		if q.After != nil && c.Position().Compare(*q.After) >= 0 {
			return true // the cursor's own conversation
		}
		if q.StartedAfter != 0 && c.StartedAtMs <= q.StartedAfter*1000+999 {
			return false // older than the range: nothing further matches
		}
		if !q.Matches(c) {
			return true
		}
		if len(page) == q.Limit {
			more = true
			return false
		}
		page = append(page, c)
		return true
	})
	return page, more
}
