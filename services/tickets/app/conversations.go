package app

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
)

// Conversation statuses, as the public API names them.
const (
	ConversationInProgress = "in-progress"
	ConversationDone       = "done"
)

// Call outcomes (call_successful), as the public API names them.
var CallOutcomes = []string{"success", "failure", "unknown"}

// ConversationSummary is a conversation as a listing shows and filters
// it, learnt from the conversation_started / conversation_ended events its
// call stack sends (ConversationEvent) and from the feedback and tags
// people add (ConversationAnnotations on stream TICKETS).
type ConversationSummary struct {
	WorkspaceID    string
	ConversationID string
	AgentID        string
	// Seen says a platform event of it arrived; annotations replayed
	// before it wait, unlisted.
	Seen        bool
	StartedAtMs int64 // first seen; it orders listings
	EndedAtMs   int64 // 0 while in progress
	// DurationSecs is what the call stack reported, else the time from
	// the start to the end (DurationReported says which).
	DurationSecs     int64
	DurationReported bool
	MessageCount     int
	Status           string // ConversationInProgress or ConversationDone
	CallSuccessful   string // one of CallOutcomes
	// From the last conversation_ended: its analysis and its transcript.
	Summary        string
	Evaluations    map[string]string  // criterion id → success, failure or unknown
	DataCollection map[string]string  // data collection id → its value as text
	DataNumbers    map[string]float64 // those values that are numbers (dataNumbers)
	ToolNames      []string           // tools called, sorted
	ToolsErrored   []string           // tools whose result was an error, sorted
	Words          []string           // the transcript's search words (SearchWords), sorted
	// From the annotations.
	Feedback string // "like", "dislike" or ""
	TagIDs   []string
}

// Rating is the conversation's rating on the SDK's 1-5 scale, or 0 when
// nobody rated it (RatingOf).
func (c ConversationSummary) Rating() int { return RatingOf(c.Feedback) }

// RatingOf maps a feedback onto the 1-5 scale that rating_min and
// rating_max filter: a like is 5, a dislike 1, none 0 (no rating filter
// matches it).
func RatingOf(feedback string) int {
	switch feedback {
	case "like":
		return 5
	case "dislike":
		return 1
	}
	return 0
}

// Feedback values, as the SDK sends them.
var FeedbackScores = []string{"like", "dislike"}

// ConversationEvent is what one conversation_started or conversation_ended
// says of its conversation, as the adapters parsed it.
type ConversationEvent struct {
	Name           string // conversation_started or conversation_ended
	WorkspaceID    string
	ConversationID string
	AgentID        string
	AtMs           int64
	TurnCount      *int
	CallSuccessful string // "" when not given
	DurationSecs   *int64
	Turns          int // turns of the transcript handed over; 0: none
	Summary        string
	Evaluations    map[string]string
	DataCollection map[string]string
	ToolNames      []string
	ToolsErrored   []string
	Words          []string
	// DeletedBy is the command of a conversation_deleted: what the keyed
	// request that deleted the conversation left (app.DeleteConversation).
	DeletedBy Deleter
}

// Applied is c after ev (c is the zero summary, or one holding only
// annotations, for a conversation not seen yet). A later
// conversation_ended replaces what the previous one said.
func (c ConversationSummary) Applied(ev ConversationEvent) ConversationSummary {
	if !c.Seen {
		c.WorkspaceID, c.ConversationID, c.Seen, c.StartedAtMs = ev.WorkspaceID, ev.ConversationID, true, ev.AtMs
		c.Status, c.CallSuccessful = ConversationInProgress, "unknown"
	}
	if ev.AgentID != "" {
		c.AgentID = ev.AgentID
	}
	switch ev.Name {
	case "conversation_started":
		// The start, when it arrives after the end, still dates the call.
		c.StartedAtMs = min(c.StartedAtMs, ev.AtMs)
	case "conversation_ended":
		c.Status, c.EndedAtMs = ConversationDone, ev.AtMs
		if ev.DurationSecs != nil && *ev.DurationSecs >= 0 {
			c.DurationSecs, c.DurationReported = *ev.DurationSecs, true
		}
		switch {
		case ev.Turns > 0:
			c.MessageCount = ev.Turns
		case ev.TurnCount != nil && *ev.TurnCount >= 0:
			c.MessageCount = *ev.TurnCount
		}
		if ev.CallSuccessful != "" {
			c.CallSuccessful = ev.CallSuccessful
		}
		c.Summary, c.Evaluations, c.DataCollection = ev.Summary, ev.Evaluations, ev.DataCollection
		c.DataNumbers = dataNumbers(ev.DataCollection)
		if ev.Turns > 0 {
			c.ToolNames, c.ToolsErrored, c.Words = ev.ToolNames, ev.ToolsErrored, ev.Words
		}
	}
	if c.EndedAtMs != 0 && !c.DurationReported {
		c.DurationSecs = max(0, (c.EndedAtMs-c.StartedAtMs)/1000)
	}
	return c
}

// AppliedLate is c after ev, an event older than the last one c applied
// (a store's projector goes on past a batch that failed, so a start can
// come after the end it preceded): a start still dates the call and names
// its agent when c names none; anything else older is passed by. changed
// is false when c stays as it was.
func (c ConversationSummary) AppliedLate(ev ConversationEvent) (next ConversationSummary, changed bool) {
	if ev.Name != "conversation_started" || !c.Seen {
		return c, false // a forgotten (deleted) conversation included
	}
	next = c.Applied(ev)
	if c.AgentID != "" {
		next.AgentID = c.AgentID // the later events' word
	}
	return next, next.StartedAtMs != c.StartedAtMs || next.AgentID != c.AgentID
}

// WithDataNumbers is c with DataNumbers made from DataCollection (a
// summary read back from a store).
func (c ConversationSummary) WithDataNumbers() ConversationSummary {
	c.DataNumbers = dataNumbers(c.DataCollection)
	return c
}

// Annotated is c with the feedback and tags of a, the whole annotation
// state (it replaces the previous one).
func (c ConversationSummary) Annotated(a *ticketsv1.ConversationAnnotations) ConversationSummary {
	c.WorkspaceID, c.ConversationID = a.WorkspaceId, a.ConversationId
	c.Feedback, c.TagIDs = a.Feedback, slices.Clone(a.TagIds)
	return c
}

// ConversationPosition is where a conversation stands in a listing
// (newest first); a cursor carries it. Both parts are fixed once the
// conversation is first seen.
type ConversationPosition struct {
	StartedAtMs int64  `json:"s"`
	ID          string `json:"i"`
}

// Position is c's place in a listing.
func (c ConversationSummary) Position() ConversationPosition {
	return ConversationPosition{StartedAtMs: c.StartedAtMs, ID: c.ConversationID}
}

// Compare orders positions ascending: start, then id.
func (p ConversationPosition) Compare(o ConversationPosition) int {
	switch {
	case p.StartedAtMs < o.StartedAtMs:
		return -1
	case p.StartedAtMs > o.StartedAtMs:
		return 1
	}
	return strings.Compare(p.ID, o.ID)
}

// Conversations is what the service knows of every conversation: a
// summary per conversation, in listing order. Implementations (an index
// in memory, MongoDB) pass one conformance suite (convmodeltest).
type Conversations interface {
	// ConversationPage returns up to q.Limit conversations of the
	// workspace matching q, newest first, and whether more follow. It
	// costs the page (plus what the filters skip on the index it walks),
	// not the workspace.
	ConversationPage(ctx context.Context, q ConversationQuery) (page []ConversationSummary, more bool, err error)
	// ConversationSummary looks one seen conversation up.
	ConversationSummary(ctx context.Context, workspaceID, conversationID string) (ConversationSummary, bool, error)
}

// ConversationWriter keeps a conversations read model: the platform
// events (PLATFORM stream sequence seq) and the annotations (TICKETS
// stream sequence seq). Each stream's redeliveries and reorderings
// converge: an older or equal sequence of the same stream changes
// nothing.
type ConversationWriter interface {
	Record(ctx context.Context, seq uint64, ev ConversationEvent) error
	Annotate(ctx context.Context, seq uint64, a *ticketsv1.ConversationAnnotations) error
}

// Transcripts keeps the transcripts call stacks hand over on
// conversation_ended.
type Transcripts interface {
	// Transcript is the conversation's turns in the public transcript
	// shape (a JSON array), or nil when none was handed over (yet).
	Transcript(ctx context.Context, workspaceID, conversationID string) (json.RawMessage, error)
}

// ReportedAnalyses keeps the analyses call stacks report on
// conversation_ended, as they came: the summary keeps only what listings
// filter on (a collected value as text, no rationale).
type ReportedAnalyses interface {
	// Reported is the analysis (a JSON object in the public shape) the
	// conversation's last conversation_ended carried, or nil.
	Reported(ctx context.Context, workspaceID, conversationID string) (json.RawMessage, error)
}

// ConversationPage is one page of a conversations listing.
type ConversationPage struct {
	Conversations []ConversationSummary
	NextCursor    *string
	HasMore       bool
	// WithSummary says the rows carry their transcript summary
	// (summary_mode=include).
	WithSummary bool
}

// ListConversations returns one page of the workspace's conversations,
// newest first, filtered. Paging while conversations arrive never repeats
// or skips one that existed when paging began.
func (a *App) ListConversations(ctx context.Context, workspaceID string, p ConversationParams) (ConversationPage, error) {
	q, err := p.query(workspaceID)
	if err != nil {
		return ConversationPage{}, err
	}
	for _, id := range q.TagIDs {
		if _, ok := a.Tags.Tag(workspaceID, id); !ok {
			// Not in this replica's index (yet): the tag's own events
			// say whether it lives, so a tag made on another replica a
			// moment ago filters at once.
			if _, err := a.GetTag(ctx, workspaceID, id); err != nil {
				return ConversationPage{}, err
			}
		}
	}
	scope := cursor.Scope("conversations", workspaceID, p.scope())
	after, err := cursor.After[ConversationPosition](a.Cursors, scope, p.Cursor)
	if err != nil {
		return ConversationPage{}, err
	}
	q.After = after
	rows, more, err := a.Conversations.ConversationPage(ctx, q)
	if err != nil {
		return ConversationPage{}, err
	}
	for i := range rows {
		rows[i].TagIDs = a.liveTags(workspaceID, rows[i].TagIDs)
	}
	page := ConversationPage{Conversations: rows, HasMore: more, WithSummary: p.SummaryMode == "include"}
	if more {
		page.NextCursor, err = cursor.Next(a.Cursors, scope, rows[len(rows)-1].Position())
	}
	return page, err
}

// ConversationDetail is one conversation with its transcript and the
// tickets raised on it.
type ConversationDetail struct {
	ConversationSummary
	Transcript json.RawMessage // nil: none handed over
	// Reported is the analysis the call stack reported, as it came (nil:
	// none, or not kept yet; the summary's then stands in for it).
	Reported json.RawMessage
	Tickets  []*ticketsv1.Ticket
	// Analysis is its latest re-judged analysis (nil: none), Label the
	// current label of that analysis (nil: none).
	Analysis *Analysis
	Label    *VerdictLabel
}

// conversationTickets bounds the tickets a conversation shows: one is
// active at a time, the others resolved or merged.
const conversationTickets = 100

// GetConversation returns a conversation of the workspace.
func (a *App) GetConversation(ctx context.Context, workspaceID, conversationID string) (ConversationDetail, error) {
	c, err := a.seenConversation(ctx, workspaceID, conversationID)
	if err != nil {
		return ConversationDetail{}, err
	}
	transcript, err := a.Transcripts.Transcript(ctx, workspaceID, conversationID)
	if err != nil {
		return ConversationDetail{}, err
	}
	tickets, _, err := a.ReadModel.Page(ctx, Query{
		WorkspaceID: workspaceID, Limit: conversationTickets,
		Filter: Filter{AgentID: c.AgentID, ConversationID: conversationID},
	})
	if err != nil {
		return ConversationDetail{}, err
	}
	c.TagIDs = a.liveTags(workspaceID, c.TagIDs)
	d := ConversationDetail{ConversationSummary: c, Transcript: transcript, Tickets: tickets}
	if a.Reported != nil {
		if d.Reported, err = a.Reported.Reported(ctx, workspaceID, conversationID); err != nil {
			return ConversationDetail{}, err
		}
	}
	if a.Verdicts != nil {
		if d.Analysis, err = a.Verdicts.Analysis(ctx, workspaceID, conversationID); err != nil {
			return ConversationDetail{}, err
		}
		labels, err := a.Verdicts.Labels(ctx, workspaceID, []LabelKey{{Kind: LabelOfConversation, ConversationID: conversationID}})
		if err != nil {
			return ConversationDetail{}, err
		}
		if len(labels) > 0 {
			d.Label = &labels[0]
		}
	}
	return d, nil
}

// liveTags is ids without the tags deleted since they were attached. A
// tag this replica has not heard of yet (made on another one a moment
// ago) is kept: attaching it checked that it lived.
func (a *App) liveTags(workspaceID string, ids []string) []string {
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return a.Tags.Deleted(workspaceID, id) })
}

// seenConversation is a conversation of the workspace the platform told
// of, or apperr.ConversationUnknown.
func (a *App) seenConversation(ctx context.Context, workspaceID, conversationID string) (ConversationSummary, error) {
	c, ok, err := a.Conversations.ConversationSummary(ctx, workspaceID, conversationID)
	if err != nil {
		return c, err
	}
	if !ok || !c.Seen {
		return c, apperr.ConversationUnknown
	}
	return c, nil
}
