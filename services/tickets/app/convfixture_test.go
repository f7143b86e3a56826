package app_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// The conversations read model, the transcripts, the removal and the
// verdicts the conversation use cases run on (the tags' index is the
// service's own, memory.TagIndex). The service's conversation index
// (adapters.ConversationIndex) lives in package adapters, which links
// NATS and MongoDB: so these are each port's meaning in a few lines, the
// read model a brute-force filter by ConversationQuery.Matches (what the
// index and the store are checked against in convmodeltest).

type convKey = [2]string // workspace, conversation

// convModel is app.Conversations, app.ConversationWriter and
// app.ConversationForgetter in a map.
type convModel struct {
	byID   map[convKey]app.ConversationSummary
	annSeq map[convKey]uint64
	erased map[convKey]bool
}

func newConvModel() *convModel {
	return &convModel{byID: map[convKey]app.ConversationSummary{}, annSeq: map[convKey]uint64{}, erased: map[convKey]bool{}}
}

func (m *convModel) Record(_ context.Context, _ uint64, ev app.ConversationEvent) error {
	k := convKey{ev.WorkspaceID, ev.ConversationID}
	if !m.erased[k] {
		m.byID[k] = m.byID[k].Applied(ev)
	}
	return nil
}

func (m *convModel) Annotate(_ context.Context, seq uint64, a *ticketsv1.ConversationAnnotations) error {
	k := convKey{a.WorkspaceId, a.ConversationId}
	if !m.erased[k] && seq > m.annSeq[k] {
		m.annSeq[k] = seq
		m.byID[k] = m.byID[k].Annotated(a)
	}
	return nil
}

func (m *convModel) ConversationPage(_ context.Context, q app.ConversationQuery) ([]app.ConversationSummary, bool, error) {
	var rows []app.ConversationSummary
	for _, c := range m.byID {
		if c.WorkspaceID == q.WorkspaceID && q.Matches(c) && (q.After == nil || c.Position().Compare(*q.After) < 0) {
			rows = append(rows, c)
		}
	}
	slices.SortFunc(rows, func(a, b app.ConversationSummary) int { return b.Position().Compare(a.Position()) })
	return rows[:min(len(rows), q.Limit)], len(rows) > q.Limit, nil
}

func (m *convModel) ConversationSummary(_ context.Context, workspaceID, conversationID string) (app.ConversationSummary, bool, error) {
	c, ok := m.byID[convKey{workspaceID, conversationID}]
	return c, ok, nil
}

func (m *convModel) ForgetConversation(_ context.Context, workspaceID, conversationID string) error {
	delete(m.byID, convKey{workspaceID, conversationID})
	m.erased[convKey{workspaceID, conversationID}] = true
	return nil
}

type transcripts map[convKey]json.RawMessage

func (t transcripts) Transcript(_ context.Context, workspaceID, conversationID string) (json.RawMessage, error) {
	return t[convKey{workspaceID, conversationID}], nil
}

// removal records what a deletion destroyed and recorded; failRecord,
// when set, is what the next RecordDeleted answers (once).
type removal struct {
	shredded, recorded []convKey
	recordedAt         time.Time
	failRecord         error
}

func (r *removal) Shred(_ context.Context, workspaceID, conversationID string) error {
	r.shredded = append(r.shredded, convKey{workspaceID, conversationID})
	return nil
}

func (r *removal) RecordDeleted(_ context.Context, workspaceID, conversationID string, at time.Time, by app.Deleter) error {
	if err := r.failRecord; err != nil {
		r.failRecord = nil
		return err
	}
	r.recorded, r.recordedAt = append(r.recorded, convKey{workspaceID, conversationID}), at
	return nil
}

// marks is app.DeletionMarks in a map.
type marks map[string]app.DeletionMark

func (m marks) DeletedBy(commandID string) (app.DeletionMark, bool) {
	mark, ok := m[commandID]
	return mark, ok
}

func (m marks) MarkDeleted(commandID string, mark app.DeletionMark) { m[commandID] = mark }

// verdicts is app.Verdicts in maps; asked is every Labels call's keys.
type verdicts struct {
	analyses map[convKey]*app.Analysis
	labels   map[app.LabelKey]app.VerdictLabel // of workspace ws_a
	asked    [][]app.LabelKey
}

func (v *verdicts) Analysis(_ context.Context, workspaceID, conversationID string) (*app.Analysis, error) {
	return v.analyses[convKey{workspaceID, conversationID}], nil
}

func (v *verdicts) Labels(_ context.Context, workspaceID string, keys []app.LabelKey) ([]app.VerdictLabel, error) {
	v.asked = append(v.asked, keys)
	var out []app.VerdictLabel
	for _, k := range keys {
		if l, ok := v.labels[k]; ok && workspaceID == "ws_a" {
			out = append(out, l)
		}
	}
	return out, nil
}

// convFixture is the ticket fixture with the conversations API wired:
// conv_1 of ws_a (agent_1, as the directory has it) and conv_9 of ws_b
// have ended.
type convFixture struct {
	*fixture
	convs       *convModel
	tags        *memory.TagIndex
	transcripts transcripts
	removal     *removal
}

func newConvFixture(t *testing.T) *convFixture {
	t.Helper()
	f := &convFixture{fixture: newFixture(t), convs: newConvModel(), tags: memory.NewTagIndex(), transcripts: transcripts{}, removal: &removal{}}
	a := f.app
	a.Conversations, a.ConvWriter, a.Tags, a.Transcripts = f.convs, f.convs, f.tags, f.transcripts
	a.Deletion = app.ConversationDeletion{Removal: f.removal, ReadModels: []app.ConversationForgetter{f.convs},
		Deleted: func(ws, id string) bool { return f.convs.erased[convKey{ws, id}] }, Marks: marks{}}
	f.hear(call{ws: "ws_a", id: "conv_1", agent: "agent_1", start: 1_700_000_000, secs: 60})
	f.hear(call{ws: "ws_b", id: "conv_9", agent: "agent_9", start: 1_700_000_000, secs: 60})
	return f
}

// call is a conversation as its call stack tells it: a start and, unless
// secs is 0 (in progress), an end secs later saying the rest.
type call struct {
	ws, id, agent string
	start, secs   int64
	outcome       string
	tools, errs   []string
	words         string
	evals, data   map[string]string
}

// events are c's conversation_started and conversation_ended.
func (c call) events() []app.ConversationEvent {
	evs := []app.ConversationEvent{{Name: "conversation_started", WorkspaceID: c.ws, ConversationID: c.id, AgentID: c.agent, AtMs: c.start * 1000}}
	if c.secs > 0 {
		evs = append(evs, app.ConversationEvent{Name: "conversation_ended", WorkspaceID: c.ws, ConversationID: c.id, AgentID: c.agent,
			AtMs: (c.start + c.secs) * 1000, CallSuccessful: c.outcome, Turns: 4, ToolNames: c.tools, ToolsErrored: c.errs,
			Words: app.SearchWords(c.words), Evaluations: c.evals, DataCollection: c.data})
	}
	return evs
}

// hear feeds the read model c's events, as the platform stream does.
func (f *convFixture) hear(c call) {
	for _, ev := range c.events() {
		_ = f.convs.Record(context.Background(), 0, ev)
	}
}

// appended is how many events the tickets' log holds.
func (f *fixture) appended() int {
	n := 0
	for {
		if _, err := f.log.At(context.Background(), uint64(n+1)); err != nil {
			return n
		}
		n++
	}
}

// as is a caller of p sending command id key ("": none).
func as(p principal.Principal, key string) principal.Caller {
	return principal.Caller{Principal: p, CommandID: key}
}

// tag creates a tag of the qa member's workspace.
func (f *convFixture) tag(t *testing.T, title string) *ticketsv1.ConversationTag {
	t.Helper()
	tg, err := f.app.CreateTag(context.Background(), as(f.qa, ""), app.TagInput{Title: title})
	if err != nil {
		t.Fatalf("create tag %q: %v", title, err)
	}
	return tg
}

// detail is GET of a conversation of ws_a, which must succeed.
func (f *convFixture) detail(t *testing.T, id string) app.ConversationDetail {
	t.Helper()
	d, err := f.app.GetConversation(context.Background(), "ws_a", id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return d
}

// list is the ids of one page of ws_a's conversations, which must succeed.
func (f *convFixture) list(t *testing.T, p app.ConversationParams) ([]string, app.ConversationPage) {
	t.Helper()
	page, err := f.app.ListConversations(context.Background(), "ws_a", p)
	if err != nil {
		t.Fatalf("list %+v: %v", p, err)
	}
	ids := make([]string, len(page.Conversations))
	for i, c := range page.Conversations {
		ids[i] = c.ConversationID
	}
	return ids, page
}
