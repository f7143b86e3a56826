package adapters

import (
	"math"
	"strings"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// packedSummary is a conversation's summary as its entry keeps it: the
// names many conversations share (workspace, agent, status, outcome,
// feedback) as numbers into the index's name table, the lists as shared
// pointers, the search words not at all (they are in the word lists).
// An app.ConversationSummary is about 300 bytes; this is half of that,
// once per conversation (a million at the limits).
type packedSummary struct {
	id, summary                         string
	startedAtMs, endedAtMs, durationSec int64
	evaluations, data                   map[string]string
	numbers                             map[string]float64
	tools, toolsErrored, tags           *[]string
	messages                            int32
	workspace, agent, status, outcome   uint32
	feedback                            uint32
	seen, durationReported              bool
}

// position is where the conversation stands in listings.
func (p *packedSummary) position() app.ConversationPosition {
	return app.ConversationPosition{StartedAtMs: p.startedAtMs, ID: p.id}
}

// pack is c as an entry keeps it, sharing what many conversations say
// alike (ids, outcomes, evaluations, collected values, tools) with the
// entries that say it: the index holds those once, not once per
// conversation. Shared values are never changed in place (a summary's
// maps and lists are replaced, not edited). c's words are not kept.
func (x *ConversationIndex) pack(c app.ConversationSummary) packedSummary {
	key := mapKey(c.DataCollection)
	return packedSummary{
		id: c.ConversationID, summary: c.Summary,
		startedAtMs: c.StartedAtMs, endedAtMs: c.EndedAtMs, durationSec: c.DurationSecs,
		evaluations:  share(x, slotKinds[slotEvaluations], c.Evaluations, mapKey(c.Evaluations)),
		data:         share(x, slotKinds[slotData], c.DataCollection, key),
		numbers:      share(x, slotKinds[slotNumbers], c.DataNumbers, key),
		tools:        x.shareList(slotKinds[slotTools], c.ToolNames),
		toolsErrored: x.shareList(slotKinds[slotToolsErrored], c.ToolsErrored),
		tags:         x.shareList(slotKinds[slotTags], c.TagIDs),
		messages:     int32(min(c.MessageCount, math.MaxInt32)),
		workspace:    x.nameID(c.WorkspaceID), agent: x.nameID(c.AgentID),
		status: x.nameID(c.Status), outcome: x.nameID(c.CallSuccessful), feedback: x.nameID(c.Feedback),
		seen: c.Seen, durationReported: c.DurationReported,
	}
}

// summaryOf is e's summary, without its search words.
func (x *ConversationIndex) summaryOf(e *convEntry) app.ConversationSummary {
	p := &e.c
	return app.ConversationSummary{
		WorkspaceID: x.names[p.workspace], ConversationID: p.id, AgentID: x.names[p.agent],
		Seen: p.seen, StartedAtMs: p.startedAtMs, EndedAtMs: p.endedAtMs,
		DurationSecs: p.durationSec, DurationReported: p.durationReported, MessageCount: int(p.messages),
		Status: x.names[p.status], CallSuccessful: x.names[p.outcome], Summary: p.summary,
		Evaluations: p.evaluations, DataCollection: p.data, DataNumbers: p.numbers,
		ToolNames: deref(p.tools), ToolsErrored: deref(p.toolsErrored),
		Feedback: x.names[p.feedback], TagIDs: deref(p.tags),
	}
}

func deref(l *[]string) []string {
	if l == nil {
		return nil
	}
	return *l
}

// shareList is list, shared under kind like share's values; nil when it
// is empty.
func (x *ConversationIndex) shareList(kind string, list []string) *[]string {
	if len(list) == 0 {
		return nil
	}
	return share(x, kind, &list, strings.Join(list, "\x1f"))
}

// nameID is the number of s in the name table, added when new. The table
// only grows: a name's number stays valid in every entry and snapshot
// reading it back (it holds outcomes, agents and workspaces, a few
// thousand at most).
func (x *ConversationIndex) nameID(s string) uint32 {
	if id, ok := x.nameIDs[s]; ok {
		return id
	}
	s = strings.Clone(s) // not a slice of an event's bytes
	id := uint32(len(x.names))
	x.names = append(x.names, s)
	x.nameIDs[s] = id
	return id
}
