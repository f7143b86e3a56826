// Package convmodeltest is the conformance suite of the conversations
// read model (app.Conversations with app.ConversationWriter): every
// listing, under every filter alone and several together, paged with
// cursors, must equal a brute-force filter (app.ConversationQuery.Matches)
// of the same generated conversations, through redeliveries, late starts
// (a start after its end, too) and annotations replayed before their
// conversation.
package convmodeltest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// Model is a read model under test.
type Model interface {
	app.Conversations
	app.ConversationWriter
}

// reference is the meaning: every summary, filtered by Matches.
type reference map[string]app.ConversationSummary

func (r reference) page(q app.ConversationQuery) ([]string, bool) {
	var rows []app.ConversationSummary
	for _, c := range r {
		if c.WorkspaceID == q.WorkspaceID && q.Matches(c) {
			rows = append(rows, c)
		}
	}
	slices.SortFunc(rows, func(a, b app.ConversationSummary) int { return b.Position().Compare(a.Position()) })
	if q.After != nil {
		rows = slices.DeleteFunc(rows, func(c app.ConversationSummary) bool { return c.Position().Compare(*q.After) >= 0 })
	}
	more := len(rows) > q.Limit
	return ids(rows[:min(len(rows), q.Limit)]), more
}

func ids(rows []app.ConversationSummary) []string {
	return testkit.IDs(rows, func(c app.ConversationSummary) string { return c.ConversationID })
}

// fixture makes conversations whose fields collide often: few agents,
// tools, criteria, values, words and tags, and start times shared by
// several conversations.
type fixture struct{ rng *rand.Rand }

func (f fixture) pick(xs ...string) string { return xs[f.rng.IntN(len(xs))] }

func (f fixture) some(xs ...string) []string {
	var out []string
	for _, x := range xs {
		if f.rng.IntN(3) == 0 {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

func (f fixture) ended(ws, id string, at int64) app.ConversationEvent {
	dur := int64(f.rng.IntN(300))
	ev := app.ConversationEvent{
		Name: "conversation_ended", WorkspaceID: ws, ConversationID: id, AgentID: f.pick("agent_a", "agent_b", "agent_c"),
		AtMs: at + 1000*int64(f.rng.IntN(200)), CallSuccessful: f.pick("success", "failure", "unknown", ""),
		Turns: 1 + f.rng.IntN(5), Summary: f.pick("", "Refund asked", "Rebooked"),
		ToolNames: f.some("lookup", "refund", "transfer"), ToolsErrored: f.some("lookup", "refund"),
		Words:          app.SearchWords(f.pick("where is my refund", "refund denied sorry", "booking moved to monday", "my bag is lost")),
		Evaluations:    map[string]string{},
		DataCollection: map[string]string{},
	}
	if f.rng.IntN(2) == 0 {
		ev.DurationSecs = &dur
	}
	for _, c := range f.some("politeness", "accuracy") {
		ev.Evaluations[c] = f.pick("success", "failure", "unknown")
	}
	if f.rng.IntN(3) > 0 {
		ev.DataCollection["amount"] = f.pick("10", "25.5", "100", "n/a")
	}
	if f.rng.IntN(2) == 0 {
		ev.DataCollection["city"] = f.pick("Denver", "Paris")
	}
	return ev
}

func ptr[T any](v T) *T { return &v }

// queries are the listings checked: every filter alone, several at once.
func queries() []app.ConversationQuery {
	base := []app.ConversationQuery{
		{}, {AgentID: "agent_a"}, {CallSuccessful: "failure"},
		{StartedBefore: 1_800_000_030, StartedAfter: 1_800_000_005},
		{DurationMin: ptr[int64](60)}, {DurationMax: ptr[int64](100)}, {DurationMin: ptr[int64](50), DurationMax: ptr[int64](150)},
		{RatingMin: 4}, {RatingMax: 2}, {RatingMin: 1, RatingMax: 5}, {RatingMin: 2, RatingMax: 4},
		{Evaluations: []app.EvaluationCond{{Criterion: "accuracy", Result: "failure"}}},
		{Evaluations: []app.EvaluationCond{{Criterion: "accuracy", Result: "success"}, {Criterion: "politeness", Result: "success"}}},
		{DataCollection: []app.DataCond{{ID: "city", Op: "eq", Values: []string{"Denver"}}}},
		{DataCollection: []app.DataCond{{ID: "city", Op: "eq", Values: []string{""}}}},
		{DataCollection: []app.DataCond{{ID: "city", Op: "neq", Values: []string{""}}}},
		{DataCollection: []app.DataCond{{ID: "city", Op: "neq", Values: []string{"Paris"}}}},
		{DataCollection: []app.DataCond{{ID: "amount", Op: "gt", Number: 20}}},
		{DataCollection: []app.DataCond{{ID: "amount", Op: "lte", Number: 25.5}}},
		{DataCollection: []app.DataCond{{ID: "amount", Op: "in", Values: []string{"10", "100"}}}},
		{DataCollection: []app.DataCond{{ID: "amount", Op: "in", Values: []string{"10", ""}}}},
		{ToolNames: []string{"refund"}}, {ToolNames: []string{"refund", "transfer"}},
		{ToolsErrored: []string{"lookup"}},
		{TagIDs: []string{"ctag_1"}}, {TagIDs: []string{"ctag_1", "ctag_2"}},
		{ExcludeStatus: []string{app.ConversationInProgress}}, {ExcludeStatus: []string{"done", "failed"}},
		{Words: []string{"refund"}}, {Words: []string{"my", "refund"}}, {Words: []string{"nothing"}},
		{AgentID: "agent_b", CallSuccessful: "success", ToolNames: []string{"lookup"}, Words: []string{"refund"}},
		{RatingMin: 5, TagIDs: []string{"ctag_2"}, ExcludeStatus: []string{"in-progress"}, DataCollection: []app.DataCond{{ID: "amount", Op: "gte", Number: 10}}},
	}
	for i := range base {
		base[i].WorkspaceID = "ws_1"
	}
	return append(base, app.ConversationQuery{WorkspaceID: "ws_empty"})
}

// Run checks the model open makes (a fresh, empty one each call) with n
// conversations.
func Run(t *testing.T, n int, open func(t *testing.T) Model) {
	ctx := context.Background()
	m, ref := open(t), reference{}
	f := fixture{rng: rand.New(rand.NewPCG(7, 9))}
	var platSeq, annSeq uint64
	annotated := map[string]bool{}
	record := func(ev app.ConversationEvent) {
		t.Helper()
		platSeq++
		if err := m.Record(ctx, platSeq, ev); err != nil {
			t.Fatal(err)
		}
		key := ev.WorkspaceID + "/" + ev.ConversationID
		ref[key] = ref[key].Applied(ev)
	}
	// A store's projector goes on past a batch that failed: a start can
	// reach the model after the end it preceded, which it still dates.
	startAfterItsEnd := func(start, end app.ConversationEvent) {
		t.Helper()
		platSeq += 2
		if err := m.Record(ctx, platSeq, end); err != nil {
			t.Fatal(err)
		}
		if err := m.Record(ctx, platSeq-1, start); err != nil {
			t.Fatal(err)
		}
		key := start.WorkspaceID + "/" + start.ConversationID
		ref[key] = ref[key].Applied(start).Applied(end)
	}
	annotate := func(a *ticketsv1.ConversationAnnotations) {
		t.Helper()
		annSeq++
		if err := m.Annotate(ctx, annSeq, a); err != nil {
			t.Fatal(err)
		}
		key := a.WorkspaceId + "/" + a.ConversationId
		ref[key], annotated[key] = ref[key].Annotated(a), true
	}
	for i := range n {
		ws := []string{"ws_1", "ws_1", "ws_2"}[i%3]
		id := fmt.Sprintf("conv_%03d", f.rng.IntN(1000)*10+i%10) + fmt.Sprint(i)
		at := 1_800_000_000_000 + 1000*int64(f.rng.IntN(40))
		ann := &ticketsv1.ConversationAnnotations{WorkspaceId: ws, ConversationId: id, Feedback: f.pick("", "like", "dislike"), TagIds: f.some("ctag_1", "ctag_2", "ctag_3")}
		if i%7 == 0 {
			annotate(ann) // replayed before the conversation is seen
		}
		var start, end *app.ConversationEvent
		if f.rng.IntN(4) > 0 {
			start = &app.ConversationEvent{Name: "conversation_started", WorkspaceID: ws, ConversationID: id, AgentID: f.pick("agent_a", "agent_b"), AtMs: at}
		}
		if f.rng.IntN(5) > 0 {
			end = ptr(f.ended(ws, id, at))
		}
		switch {
		case start != nil && end != nil && i%11 == 5:
			startAfterItsEnd(*start, *end)
		case start != nil && end != nil:
			record(*start)
			record(*end)
		case start != nil:
			record(*start)
		case end != nil:
			record(*end)
		}
		if i%7 != 0 && f.rng.IntN(2) == 0 {
			annotate(ann)
		}
	}
	// A stale redelivery of each stream changes nothing: the first events
	// again, said otherwise.
	for key, c := range ref {
		if !c.Seen || c.WorkspaceID != "ws_1" || !annotated[key] {
			continue
		}
		stale := app.ConversationEvent{Name: "conversation_ended", WorkspaceID: c.WorkspaceID, ConversationID: c.ConversationID, AtMs: 1, CallSuccessful: "success", Words: []string{"stale"}}
		if err := m.Record(ctx, 1, stale); err != nil {
			t.Fatal(err)
		}
		if err := m.Annotate(ctx, 1, &ticketsv1.ConversationAnnotations{WorkspaceId: c.WorkspaceID, ConversationId: c.ConversationID, Feedback: "like"}); err != nil {
			t.Fatal(err)
		}
		break
	}
	queries := append(queries(), app.ConversationQuery{WorkspaceID: "ws_1", Words: []string{"stale"}})

	for qi, q := range queries {
		for _, limit := range []int{3, 100} {
			q.Limit, q.After = limit, nil
			for page := 0; ; page++ {
				want, wantMore := ref.page(q)
				rows, more, err := m.ConversationPage(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if got := ids(rows); !slices.Equal(got, want) || more != wantMore {
					t.Fatalf("query %d %+v limit %d page %d:\n got %v more %v\nwant %v more %v", qi, q, limit, page, got, more, want, wantMore)
				}
				if !more {
					break
				}
				pos := rows[len(rows)-1].Position()
				q.After = &pos
			}
		}
	}
	for key, c := range ref {
		if !c.Seen {
			continue
		}
		got, ok, err := m.ConversationSummary(ctx, c.WorkspaceID, c.ConversationID)
		if err != nil || !ok || got.Position() != c.Position() || got.Rating() != c.Rating() || got.Status != c.Status {
			t.Fatalf("%s: summary %+v (%v %v), want %+v", key, got, ok, err, c)
		}
	}
}
