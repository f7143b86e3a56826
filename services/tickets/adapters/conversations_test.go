package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/app/convmodeltest"
)

func platformRecord(t *testing.T, ws, event string, at time.Time, data map[string]any) eventstore.Record {
	t.Helper()
	body, err := json.Marshal(map[string]any{"event": event, "timestamp": at.UTC().Format(time.RFC3339Nano), "data": data})
	if err != nil {
		t.Fatal(err)
	}
	return eventstore.Record{Subject: "platform.evt." + ws + "." + event, Data: body, Time: at}
}

func pageIDs(rows []app.ConversationSummary) string {
	out := ""
	for i, c := range rows {
		if i > 0 {
			out += ","
		}
		out += c.ConversationID
	}
	return out
}

// Pages walk newest first from the cursor, ties broken by id, and a
// conversation whose start arrives late moves to its true place.
func TestConversationIndexPagesNewestFirst(t *testing.T) {
	x := NewConversationIndex()
	base := time.Unix(1_800_000_000, 0)
	apply := func(ws, event, conv, agent string, at time.Time, extra map[string]any) {
		data := map[string]any{"conversation_id": conv, "agent_id": agent}
		for k, v := range extra {
			data[k] = v
		}
		ev, ok := parseConversationEvent(platformRecord(t, ws, event, at, data))
		if !ok {
			t.Fatalf("%s %s not parsed", event, conv)
		}
		_ = x.Record(context.Background(), 0, ev.summaryEvent())
	}
	for i := range 5 {
		apply("ws1", "conversation_started", fmt.Sprintf("c%d", i), "agent_a", base.Add(time.Duration(i/2)*time.Minute), nil)
	}
	apply("ws2", "conversation_started", "c9", "agent_a", base, nil)
	// c5 is heard of first by its end; its start comes later and is older.
	apply("ws1", "conversation_ended", "c5", "agent_b", base.Add(10*time.Minute), map[string]any{"call_successful": "failure"})
	apply("ws1", "conversation_started", "c5", "agent_b", base.Add(-time.Minute), nil)

	var got []string
	q := app.ConversationQuery{WorkspaceID: "ws1", Limit: 2}
	for {
		rows, more, _ := x.ConversationPage(context.Background(), q)
		got = append(got, pageIDs(rows))
		if !more {
			break
		}
		pos := rows[len(rows)-1].Position()
		q.After = &pos
	}
	if fmt.Sprint(got) != "[c4,c3 c2,c1 c0,c5]" {
		t.Fatalf("pages %v", got)
	}
	c5, _ := x.Summary("ws1", "c5")
	if c5.DurationSecs != 660 || c5.Status != app.ConversationDone || c5.CallSuccessful != "failure" || c5.StartedAtMs != base.Add(-time.Minute).UnixMilli() {
		t.Fatalf("c5: %+v", c5)
	}
	if rows, _, _ := x.ConversationPage(context.Background(), app.ConversationQuery{WorkspaceID: "ws1", AgentID: "agent_b", Limit: 10}); pageIDs(rows) != "c5" {
		t.Fatalf("agent_b: %s", pageIDs(rows))
	}
	before := base.Add(time.Minute).Unix()
	if rows, _, _ := x.ConversationPage(context.Background(), app.ConversationQuery{WorkspaceID: "ws1", StartedBefore: before, StartedAfter: base.Unix() - 1, Limit: 10}); pageIDs(rows) != "c1,c0" {
		t.Fatalf("time range: %s", pageIDs(rows))
	}
	if rows, _, _ := x.ConversationPage(context.Background(), app.ConversationQuery{WorkspaceID: "ws3", Limit: 10}); len(rows) != 0 {
		t.Fatalf("unknown workspace lists %s", pageIDs(rows))
	}
}

// What producers put on the stream is checked before it is remembered:
// ids that could never be asked for, and transcripts not in the public
// shape, are refused.
func TestConversationEventsAreChecked(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	for name, data := range map[string]map[string]any{
		"bad conversation id": {"conversation_id": "a b"},
		"bad agent id":        {"conversation_id": "c1", "agent_id": "x/y"},
		"no conversation id":  {"agent_id": "agent_1"},
	} {
		if _, ok := parseConversationEvent(platformRecord(t, "ws1", "conversation_ended", at, data)); ok {
			t.Errorf("%s accepted", name)
		}
	}
	for name, transcript := range map[string]any{
		"not an array":   map[string]any{"role": "user"},
		"turn sans role": []any{map[string]any{"message": "hi"}},
		"not objects":    []any{"hi"},
	} {
		ev, ok := parseConversationEvent(platformRecord(t, "ws1", "conversation_ended", at, map[string]any{"conversation_id": "c1", "transcript": transcript}))
		if !ok || ev.Transcript != nil || ev.turns != 0 {
			t.Errorf("%s: kept %s (ok %v)", name, ev.Transcript, ok)
		}
	}
	id, doc, _ := TranscriptHandler(context.Background(), platformRecord(t, "ws1", "conversation_ended", at, map[string]any{
		"conversation_id": "c1", "transcript": []any{map[string]any{"role": "user", "message": "hi", "time_in_call_secs": 0}}}))
	if d, ok := doc.(TranscriptDoc); id != "ws1/c1" || !ok || d.Turns != `[{"message":"hi","role":"user","time_in_call_secs":0}]` {
		t.Fatalf("transcript projected as %q %+v", id, doc)
	}
}

// A transcript published on the subject directly (not through the API)
// follows the API's value rules: one with a number beyond a float64 or
// a lone surrogate is not kept; an integral 3.0 is kept as 3.
func TestTranscriptFromTheBusFollowsTheValueRules(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	record := func(transcript string) eventstore.Record {
		return eventstore.Record{Subject: "platform.evt.ws1.conversation_ended", Time: at,
			Data: []byte(`{"event":"conversation_ended","timestamp":"2027-01-15T08:00:00Z","data":{"conversation_id":"c1","transcript":` + transcript + `}}`)}
	}
	for _, bad := range []string{`[{"role":"user","time_in_call_secs":1e400}]`, `[{"role":"user","message":"\ud800"}]`} {
		ev, ok := parseConversationEvent(record(bad))
		if !ok || ev.Transcript != nil || ev.turns != 0 {
			t.Errorf("%s: kept %s (ok %v)", bad, ev.Transcript, ok)
		}
	}
	ev, ok := parseConversationEvent(record(`[{"role":"user","time_in_call_secs":3.0}]`))
	if !ok || string(ev.Transcript) != `[{"role":"user","time_in_call_secs":3}]` || ev.turns != 1 {
		t.Errorf("3.0: kept %s (ok %v)", ev.Transcript, ok)
	}
}

// The memory index answers every conversations listing as the brute-force
// filter of the same data does (the conformance suite).
func TestConversationIndexConformance(t *testing.T) {
	convmodeltest.Run(t, 600, func(*testing.T) convmodeltest.Model { return NewConversationIndex() })
	// Numeric filters read from the trees ordered by value whenever that
	// is the cheaper way, as in a large workspace.
	t.Run("ranges", func(t *testing.T) {
		convmodeltest.Run(t, 600, func(*testing.T) convmodeltest.Model {
			x := NewConversationIndex()
			x.rangeFloor = 0
			return x
		})
	})
}

// The store read model on the embedded store (and on MongoDB in the
// container tier, VOICEAI_TEST_DOCKER=1) answers as the memory index does.
func TestConversationStoreConformance(t *testing.T) {
	// The embedded store evaluates filters by reading each document: a
	// smaller fixture.
	convmodeltest.Run(t, 150, testenv.OnFreshDatabases(t, "conversations_conformance",
		func(ctx context.Context, db *mongo.Database) (convmodeltest.Model, error) {
			return NewConversationStore(ctx, db)
		}))
}

// A conversation's first event and its first annotation written at once
// (the store's two replays after a drop run side by side) both land: the
// annotation that found no document and then met the one Record inserted
// was taken for a newer annotation and dropped.
func TestConversationStoreFirstWritesAtOnce(t *testing.T) {
	ctx := context.Background()
	store := testenv.OnFreshDatabases(t, "conversations_at_once", func(ctx context.Context, db *mongo.Database) (*ConversationStore, error) {
		return NewConversationStore(ctx, db)
	})(t)
	for i := range 40 {
		id := fmt.Sprintf("conv_%d", i)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Go(func() {
			errs[0] = store.Record(ctx, 1, app.ConversationEvent{Name: "conversation_started", WorkspaceID: "ws_1", ConversationID: id, AgentID: "agent_a", AtMs: 1_800_000_000_000})
		})
		wg.Go(func() {
			errs[1] = store.Annotate(ctx, 1, &ticketsv1.ConversationAnnotations{WorkspaceId: "ws_1", ConversationId: id, Feedback: "like"})
		})
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		c, found, err := store.ConversationSummary(ctx, "ws_1", id)
		if err != nil || !found || c.Feedback != "like" {
			t.Fatalf("%s written at once: found %v, feedback %q, %v; want it seen with its feedback", id, found, c.Feedback, err)
		}
	}
}

// On a real MongoDB (the container tier) every conversations listing query
// is answered from an index: the plan has no collection scan.
func TestConversationStoreQueriesUseAnIndex(t *testing.T) {
	db := testenv.PlanDatabase(t, "conversation_plans")
	if _, err := NewConversationStore(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	after := &app.ConversationPosition{StartedAtMs: 10, ID: "conv_1"}
	for _, q := range []app.ConversationQuery{
		{WorkspaceID: "ws", Limit: 100},
		{WorkspaceID: "ws", Limit: 100, After: after},
		{WorkspaceID: "ws", Limit: 100, AgentID: "agent_1", CallSuccessful: "failure"},
		{WorkspaceID: "ws", Limit: 100, Words: []string{"refund", "denied"}, After: after},
		{WorkspaceID: "ws", Limit: 100, ToolNames: []string{"a", "b"}},
		{WorkspaceID: "ws", Limit: 100, TagIDs: []string{"ctag_1"}},
		{WorkspaceID: "ws", Limit: 100, RatingMin: 4},
		{WorkspaceID: "ws", Limit: 100, DataCollection: []app.DataCond{{ID: "amount", Op: "gt", Number: 3}}},
	} {
		filter, _ := ConversationFilter(q)
		text := testenv.FindPlan(t, db, bson.D{{Key: "find", Value: ConversationsCollection}, {Key: "filter", Value: filter},
			{Key: "sort", Value: ConversationSort}, {Key: "limit", Value: q.Limit + 1}})
		if strings.Contains(text, "COLLSCAN") || !strings.Contains(text, "IXSCAN") {
			t.Errorf("%+v: plan %s", q, text)
		}
	}
}

// An analysis in the public shape is read (results other than the three
// outcomes dropped); one of another shape is dropped, not the event.
func TestConversationAnalysisIsRead(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	ev, ok := parseConversationEvent(platformRecord(t, "ws1", "conversation_ended", at, map[string]any{
		"conversation_id": "c1", "call_successful": "failure",
		"analysis": map[string]any{
			"transcript_summary":          "Refund refused",
			"evaluation_criteria_results": map[string]any{"accuracy": map[string]any{"result": "failure"}, "tone": map[string]any{"result": "maybe"}},
			"data_collection_results":     map[string]any{"amount": map[string]any{"value": 12.5}, "city": map[string]any{"value": "Lima"}, "none": map[string]any{"value": nil}},
		}}))
	s := ev.summaryEvent()
	if !ok || s.Summary != "Refund refused" || fmt.Sprint(s.Evaluations) != "map[accuracy:failure]" || fmt.Sprint(s.DataCollection) != "map[amount:12.5 city:Lima]" {
		t.Fatalf("read %+v (ok %v)", s, ok)
	}
	ev, ok = parseConversationEvent(platformRecord(t, "ws1", "conversation_ended", at, map[string]any{
		"conversation_id": "c1", "call_successful": "failure", "analysis": []any{"not", "an", "object"}}))
	if s := ev.summaryEvent(); !ok || s.CallSuccessful != "failure" || s.Evaluations != nil {
		t.Fatalf("an analysis of another shape: %+v (ok %v)", s, ok)
	}
}

// A sealed transcript is opened once, with its conversation's key, into
// its words; one that is no base64 keeps the event and its turn count
// but says no words (as a tampered one); one that is no string is no
// event the platform publishes.
func TestSealedTranscriptIsRead(t *testing.T) {
	ctx := context.Background()
	keys := convseal.NewMemoryKeys()
	at := time.Unix(1_800_000_000, 0)
	sealed, err := convseal.SealData(ctx, keys, "ws1", json.RawMessage(`{"conversation_id":"c1","transcript":[{"role":"user","message":"Where is my Refund?","time_in_call_secs":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := json.Unmarshal(sealed, &data); err != nil {
		t.Fatal(err)
	}
	ev, ok := parseConversationEvent(platformRecord(t, "ws1", "conversation_ended", at, data))
	if !ok {
		t.Fatal("a sealed transcript's event not parsed")
	}
	ev.openSealed(ctx, keys)
	if ev.turns != 1 || strings.Join(ev.shape.words, " ") != "is my refund where" {
		t.Errorf("opened: %d turns, words %q", ev.turns, ev.shape.words)
	}
	if _, err := ev.Sealed.open(ctx, keys, "ws1", "c1"); !errors.Is(err, convseal.ErrTampered) {
		t.Errorf("opened twice: %v, want ErrTampered (it is decrypted in place)", err)
	}

	// The same, its first character written as a JSON escape.
	good := data["transcript_sealed"].(string)
	rec := platformRecord(t, "ws1", "conversation_ended", at, data)
	rec.Data = []byte(strings.Replace(string(rec.Data), `"`+good, fmt.Sprintf(`"\u%04x`, good[0])+good[1:], 1))
	if ev, ok = parseConversationEvent(rec); !ok {
		t.Fatalf("escaped: not parsed: %s", rec.Data)
	}
	ev.openSealed(ctx, keys)
	if ev.turns != 1 || len(ev.shape.words) != 4 {
		t.Errorf("escaped: %d turns, words %q", ev.turns, ev.shape.words)
	}

	data["transcript_sealed"] = "not base64!"
	ev, ok = parseConversationEvent(platformRecord(t, "ws1", "conversation_ended", at, data))
	if !ok || !ev.Sealed.set || ev.turns != 1 {
		t.Fatalf("not base64: ok %v, set %v, %d turns", ok, ev.Sealed.set, ev.turns)
	}
	ev.openSealed(ctx, keys)
	if ev.shape.words != nil {
		t.Errorf("not base64: words %q", ev.shape.words)
	}

	data["transcript_sealed"] = 42
	if _, ok := parseConversationEvent(platformRecord(t, "ws1", "conversation_ended", at, data)); ok {
		t.Error("a sealed transcript that is no string parsed")
	}
}
