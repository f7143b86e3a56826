package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/convseal/kvkeys"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters"
)

// streamMessages is every message every stream holds, read directly
// (subject, headers and data), as a copy of the log would show them.
func streamMessages(t *testing.T, js jetstream.JetStream) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	var out []*jetstream.RawStreamMsg
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		str, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		st := str.CachedInfo().State
		for seq := st.FirstSeq; seq > 0 && seq <= st.LastSeq; seq++ {
			m, err := str.GetMsg(ctx, seq)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	if names.Err() != nil {
		t.Fatal(names.Err())
	}
	return out
}

// holding are the messages whose bytes hold text.
func holding(msgs []*jetstream.RawStreamMsg, text string) []string {
	var out []string
	for _, m := range msgs {
		raw := m.Subject + "\n"
		for k, v := range m.Header {
			raw += k + ": " + strings.Join(v, ",") + "\n"
		}
		if strings.Contains(raw+string(m.Data), text) {
			out = append(out, m.Subject)
		}
	}
	return out
}

// filesHolding are the files under dir whose bytes hold text.
func filesHolding(t *testing.T, dir, text string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil // a file the store is rewriting
		}
		if bytes.Contains(b, []byte(text)) {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// storeHolding are the read-model collections (every database of the
// stack's store) holding a document whose content holds text.
func storeHolding(t *testing.T, mc *mongo.Client, text string) []string {
	t.Helper()
	ctx := context.Background()
	dbs, err := mc.ListDatabaseNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, db := range dbs {
		colls, err := mc.Database(db).ListCollectionNames(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		for _, coll := range colls {
			cur, err := mc.Database(db).Collection(coll).Find(ctx, bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			var docs []bson.Raw
			if err := cur.All(ctx, &docs); err != nil {
				t.Fatal(err)
			}
			for _, d := range docs {
				if js, err := bson.MarshalExtJSON(d, false, false); err == nil && bytes.Contains(js, []byte(text)) {
					out = append(out, db+"."+coll)
					break
				}
			}
		}
	}
	return out
}

// replayTranscripts runs the tickets service's transcript projection over
// every PLATFORM message, as a rebuild does, and answers the documents
// it would write.
func replayTranscripts(t *testing.T, js jetstream.JetStream, msgs []*jetstream.RawStreamMsg, secret string) map[string]adapters.TranscriptDoc {
	t.Helper()
	keys, err := kvkeys.Open(context.Background(), js, 1, secret)
	if err != nil {
		t.Fatal(err)
	}
	h := adapters.TranscriptProjection(keys)
	index := adapters.NewConversationIndex()
	docs := map[string]adapters.TranscriptDoc{}
	for _, m := range msgs {
		if !strings.HasPrefix(m.Subject, "platform.evt.") {
			continue
		}
		rec := eventstore.Record{Subject: m.Subject, Data: m.Data, Seq: m.Sequence, Time: m.Time}
		index.Apply(rec)
		id, doc, err := h(context.Background(), rec)
		if err != nil {
			t.Fatal(err)
		}
		if id != "" {
			docs[id] = doc.(adapters.TranscriptDoc)
		}
	}
	return docs
}

// Deleting a conversation through the gateway: its transcript, handed
// over through the API, never reaches a stream in the clear; after the
// delete no answer, read model, replay, stream message or file of the
// stack's NATS store holds it, and a restarted stack (its index replayed
// from the stream) still knows it deleted. Another workspace's delete is
// a 404, a read key's a 403, a second delete a 404 but for the keyed
// delete sent again, answered 200 as the first was, before and after a
// restart; its key sent to the other conversation is a 422 that deletes
// nothing.
func TestDeleteConversationShredsItsTranscript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, dir, func(c *Config) { administered(c, nil) })
	agent := newAgent(t, s, adminKey, "Support")
	const phrase = "my passport number is ZX-4471-QQ"
	const kept = "the other caller asked about opening hours"
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for conv, line := range map[string]string{"conv_gone": phrase, "conv_kept": kept} {
		ingest(t, s, adminKey, "conversation_started", base, map[string]any{"conversation_id": conv, "agent_id": agent})
		ingest(t, s, adminKey, "conversation_ended", base.Add(time.Minute), map[string]any{
			"conversation_id": conv, "agent_id": agent, "call_successful": "failure",
			"transcript": []map[string]any{{"role": "user", "message": line, "time_in_call_secs": 0}, {"role": "agent", "message": "noted", "time_in_call_secs": 2}},
			// The analysis says it again: a summary, a value collected.
			"analysis": map[string]any{"transcript_summary": "The caller said: " + line,
				"data_collection_results": map[string]any{"said": map[string]any{"data_collection_id": "said", "value": line, "rationale": "read out"}}}})
	}
	eventually(t, 10*time.Second, "both transcripts are kept", func() bool {
		for _, conv := range []string{"conv_gone", "conv_kept"} {
			if r := call(t, s, "GET", "/v1/convai/conversations/"+conv, adminKey, ""); r.Code != 200 || !bytes.Contains(r.Body, []byte("noted")) {
				return false
			}
		}
		return true
	})
	r := call(t, s, "GET", "/v1/convai/conversations/conv_gone", adminKey, "")
	if !bytes.Contains(r.Body, []byte(phrase)) || r.JSON(t)["transcript"].([]any)[0].(map[string]any)["message"] != phrase {
		t.Fatalf("before the delete: %s", r.Body)
	}
	tk := decodeTicket(t, call(t, s, "POST", "/v1/convai/triage-tickets", adminKey, `{"conversation_id":"conv_gone","qa_comment":"leaked a document number"}`))
	mc := (&testenv.Env{MongoURI: s.MongoURI}).Mongo(t)
	holders := "voiceai_tickets.conversation_reported_analyses,voiceai_tickets.conversation_transcripts"
	eventually(t, 10*time.Second, "the transcript and the analysis are kept, and nothing else holds them", func() bool {
		got := storeHolding(t, mc, "ZX-4471")
		slices.Sort(got)
		return strings.Join(got, ",") == holders
	})

	js := testenv.JetStreamAt(t, s.NATSURL)
	secret, err := os.ReadFile(filepath.Join(dir, "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	// The transcript went on the stream sealed: no message holds it, yet
	// the projection opens it (so the checks below can see a difference).
	if got := holding(streamMessages(t, js), phrase); len(got) > 0 {
		t.Fatalf("stream messages hold the transcript in the clear: %v", got)
	}
	if doc := replayTranscripts(t, js, streamMessages(t, js), strings.TrimSpace(string(secret)))["ws_default"+"/conv_gone"]; !strings.Contains(doc.Turns, phrase) {
		t.Fatalf("a replay before the delete does not open the transcript: %+v", doc)
	}

	// Who may delete: only a convai_write key of the conversation's
	// workspace.
	other := createWorkspace(t, s, "Elsewhere")
	wantError(t, call(t, s, "DELETE", "/v1/convai/conversations/conv_gone", other.APIKey, ""), 404, "conversation_not_found")
	reader, _, _ := newKey(t, s, adminKey, `["convai_read"]`, "")
	if r := call(t, s, "DELETE", "/v1/convai/conversations/conv_gone", reader, ""); r.Code != 403 {
		t.Fatalf("a read key's delete: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "GET", "/v1/convai/conversations/conv_gone", adminKey, ""); r.Code != 200 {
		t.Fatalf("refused deletes deleted it: %d", r.Code)
	}

	const deleteKey = "delete-conv-gone-1"
	keyedDeleteAnswered := func(s *Stack, when string) {
		t.Helper()
		r := call(t, s, "DELETE", "/v1/convai/conversations/conv_gone", adminKey, "", "Idempotency-Key", deleteKey)
		if r.Code != 200 || strings.TrimSpace(string(r.Body)) != "{}" {
			t.Fatalf("%s: the keyed delete: %d %s", when, r.Code, r.Body)
		}
	}
	keyedDeleteAnswered(s, "the delete")
	keyedDeleteAnswered(s, "the keyed delete sent again")
	wantError(t, call(t, s, "DELETE", "/v1/convai/conversations/conv_gone", adminKey, ""), 404, "conversation_not_found")
	wantInvalid(t, call(t, s, "DELETE", "/v1/convai/conversations/conv_kept", adminKey, "", "Idempotency-Key", deleteKey),
		`["header","Idempotency-Key"]`, "idempotency_key_reused")

	afterDelete := func(s *Stack, when string) {
		t.Helper()
		wantError(t, call(t, s, "GET", "/v1/convai/conversations/conv_gone", adminKey, ""), 404, "conversation_not_found")
		if got := ids(listConversations(t, s, adminKey, "")); got != "conv_kept" {
			t.Fatalf("%s: listing %q, want conv_kept alone", when, got)
		}
		if r := call(t, s, "GET", "/v1/convai/conversations/conv_kept", adminKey, ""); !bytes.Contains(r.Body, []byte(kept)) {
			t.Fatalf("%s: the other conversation lost its transcript: %s", when, r.Body)
		}
		r := call(t, s, "GET", "/v1/convai/triage-tickets/"+tk.AgentqaTicketID, adminKey, "")
		var view struct {
			ConversationIDs []string `json:"conversation_ids"`
			Deleted         []string `json:"deleted_conversation_ids"`
		}
		if err := json.Unmarshal(r.Body, &view); err != nil || len(view.Deleted) != 1 || view.Deleted[0] != "conv_gone" {
			t.Fatalf("%s: the ticket on it says %s", when, r.Body)
		}
		// No answer of the API holds the text: the conversation, the
		// listings, the ticket.
		for _, path := range []string{"/v1/convai/conversations", "/v1/convai/triage-tickets/" + tk.AgentqaTicketID, "/v1/convai/triage-tickets?search=passport"} {
			if r := call(t, s, "GET", path, adminKey, ""); bytes.Contains(r.Body, []byte("ZX-4471")) {
				t.Fatalf("%s: %s answers the transcript: %s", when, path, r.Body)
			}
		}
	}
	afterDelete(s, "after the delete")

	msgs := streamMessages(t, js)
	if got := holding(msgs, phrase); len(got) > 0 {
		t.Fatalf("stream messages hold the transcript after the delete: %v", got)
	}
	docs := replayTranscripts(t, js, msgs, strings.TrimSpace(string(secret)))
	ws := "ws_default"
	if doc := docs[ws+"/conv_gone"]; !doc.Deleted || doc.Turns != "" {
		t.Fatalf("a rebuilt transcript projection holds %+v, want a tombstone", doc)
	}
	if doc := docs[ws+"/conv_kept"]; !strings.Contains(doc.Turns, kept) {
		t.Fatalf("a rebuilt projection lost the other transcript: %+v", doc)
	}

	// No collection of the store holds it, and the transcripts collection
	// rebuilt from the stream by the service's own projection lacks it.
	eventually(t, 10*time.Second, "the projectors have written the deletion", func() bool {
		return len(storeHolding(t, mc, "ZX-4471")) == 0
	})
	keys, err := kvkeys.Open(context.Background(), js, 1, strings.TrimSpace(string(secret)))
	if err != nil {
		t.Fatal(err)
	}
	rebuilt := mc.Database("voiceai_tickets").Collection("conversation_transcripts_rebuilt")
	if n, err := projection.Rebuild(context.Background(), js, "PLATFORM", adapters.TranscriptsFilter, rebuilt, adapters.TranscriptProjection(keys)); err != nil || n == 0 {
		t.Fatalf("rebuild: %d records, %v", n, err)
	}
	var gone, kept2 adapters.TranscriptDoc
	if err := rebuilt.FindOne(context.Background(), bson.D{{Key: "_id", Value: "ws_default/conv_gone"}}).Decode(&gone); err != nil || !gone.Deleted || gone.Turns != "" {
		t.Fatalf("the rebuilt transcripts hold %+v (%v), want a tombstone", gone, err)
	}
	if err := rebuilt.FindOne(context.Background(), bson.D{{Key: "_id", Value: "ws_default/conv_kept"}}).Decode(&kept2); err != nil || !strings.Contains(kept2.Turns, kept) {
		t.Fatalf("the rebuilt transcripts lost the other conversation: %+v (%v)", kept2, err)
	}
	if got := storeHolding(t, mc, "ZX-4471"); len(got) > 0 {
		t.Fatalf("after a rebuild, collections hold the transcript: %v", got)
	}

	// Without the record of the deletion (a projector behind it, or a
	// copy of the log taken before), the sealed transcript still does
	// not open: its key is destroyed.
	var beforeRecord []*jetstream.RawStreamMsg
	for _, m := range msgs {
		if !strings.HasSuffix(m.Subject, "."+adapters.ConversationDeletedEvent) {
			beforeRecord = append(beforeRecord, m)
		}
	}
	if doc := replayTranscripts(t, js, beforeRecord, strings.TrimSpace(string(secret)))[ws+"/conv_gone"]; strings.Contains(doc.Turns, phrase) {
		t.Fatalf("the sealed transcript opens after the delete: %+v", doc)
	}

	// A stack started again on the same data replays its index from the
	// streams: the conversation is still deleted.
	_ = s.Close()
	s = start(t, dir, func(c *Config) { administered(c, nil) })
	afterDelete(s, "after a restart")
	keyedDeleteAnswered(s, "the keyed delete after a restart")
	_ = s.Close()
	if got := filesHolding(t, filepath.Join(dir, "nats"), "ZX-4471"); len(got) > 0 {
		t.Fatalf("files of the NATS store hold the transcript: %v", got)
	}
}

// A regression test made from a recorded conversation says, once the
// conversation is deleted, that it was (from_conversation_metadata's
// conversation_deleted); the turns it was made from are the test's own.
func TestDeletedConversationShowsOnItsTest(t *testing.T) {
	t.Parallel()
	s := startAdmin(t)
	agent := newAgent(t, s, adminKey, "Support")
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	ingest(t, s, adminKey, "conversation_started", at, map[string]any{"conversation_id": "conv_src", "agent_id": agent})
	ingest(t, s, adminKey, "conversation_ended", at.Add(time.Minute), map[string]any{"conversation_id": "conv_src", "agent_id": agent,
		"transcript": []map[string]any{{"role": "user", "message": "Are you open on Sunday?", "time_in_call_secs": 0},
			{"role": "agent", "message": "We are closed on Sundays.", "time_in_call_secs": 2}}})
	var testID string
	eventually(t, 10*time.Second, "a test is made from the recorded conversation", func() bool {
		r := call(t, s, "POST", "/v1/convai/agent-testing/from-conversation", adminKey, `{"conversation_id":"conv_src","turn_index":1}`)
		if r.Code == 201 {
			testID, _ = r.JSON(t)["id"].(string)
		}
		return testID != ""
	})
	deleted := func() any {
		r := call(t, s, "GET", "/v1/convai/agent-testing/"+testID, adminKey, "")
		if r.Code != 200 {
			t.Fatalf("get test: %d %s", r.Code, r.Body)
		}
		meta, _ := r.JSON(t)["from_conversation_metadata"].(map[string]any)
		if meta["conversation_id"] != "conv_src" {
			t.Fatalf("from_conversation_metadata %v", meta)
		}
		return meta["conversation_deleted"]
	}
	if got := deleted(); got != false {
		t.Fatalf("before the delete, conversation_deleted = %v", got)
	}
	if r := call(t, s, "DELETE", "/v1/convai/conversations/conv_src", adminKey, ""); r.Code != 200 {
		t.Fatalf("delete: %d %s", r.Code, r.Body)
	}
	eventually(t, 10*time.Second, "the test says its conversation was deleted", func() bool { return deleted() == true })
	wantError(t, call(t, s, "POST", "/v1/convai/agent-testing/from-conversation", adminKey, `{"conversation_id":"conv_src","turn_index":1}`),
		404, "conversation_not_found")
}

// replayAnalyses runs the tickets service's analysis projection over
// every TESTRUNS message, as a rebuild does, and answers the documents it
// would write, by conversation.
func replayAnalyses(t *testing.T, js jetstream.JetStream, msgs []*jetstream.RawStreamMsg, secret string) map[string]adapters.AnalysisDoc {
	return replayVerdicts[adapters.AnalysisDoc](t, js, msgs, secret, "testruns.cnv.", adapters.AnalysisHandler)
}

// replayLabels is replayAnalyses of the conversations' labels.
func replayLabels(t *testing.T, js jetstream.JetStream, msgs []*jetstream.RawStreamMsg, secret string) map[string]adapters.LabelDoc {
	return replayVerdicts[adapters.LabelDoc](t, js, msgs, secret, "testruns.clbl.", adapters.LabelHandler)
}

func replayVerdicts[D any](t *testing.T, js jetstream.JetStream, msgs []*jetstream.RawStreamMsg, secret, prefix string, handler func(convseal.Keys) projection.Handler) map[string]D {
	t.Helper()
	keys, err := kvkeys.Open(context.Background(), js, 1, secret)
	if err != nil {
		t.Fatal(err)
	}
	h := handler(keys)
	docs := map[string]D{}
	for _, m := range msgs {
		if !strings.HasPrefix(m.Subject, prefix) {
			continue
		}
		id, doc, err := h(context.Background(), eventstore.Record{Subject: m.Subject, Type: m.Header.Get(events.HeaderEventType), Data: m.Data, Seq: m.Sequence})
		if err != nil {
			t.Fatal(err)
		}
		if id != "" {
			docs[id] = doc.(D)
		}
	}
	return docs
}

// A re-judged analysis holds what the conversation said (the judge's
// summary of the transcript and its reasons), and a reviewer's note on it
// may too, so both go on TESTRUNS sealed under the conversation's key:
// deleting the conversation makes them unreadable there like the
// transcript, for a replay as for the API, and no analysis of it is
// recorded afterwards.
func TestDeleteConversationShredsItsAnalyses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, dir, func(c *Config) { administered(c, nil) })
	agent := evaluatedAgent(t, s)
	recordConversation(t, s, agent, "conv_judged", "Our opening hours are nine to five every weekday.")
	recordConversation(t, s, agent, "conv_other", "Refunds are given within 30 days.")
	analyse(t, s, "conv_judged")
	analyse(t, s, "conv_other")

	var shown struct {
		Analysis wire.ConversationAnalysis `json:"analysis"`
	}
	eventually(t, 10*time.Second, "the analysis shows on the conversation", func() bool {
		r := call(t, s, "GET", "/v1/convai/conversations/conv_judged", adminKey, "")
		return r.Code == 200 && json.Unmarshal(r.Body, &shown) == nil && len(shown.Analysis.EvaluationCriteriaResultsList) == 2
	})
	summary, rationale := shown.Analysis.TranscriptSummary, shown.Analysis.EvaluationCriteriaResultsList[0].Rationale
	if summary == "" || rationale == "" {
		t.Fatalf("the analysis has no summary or rationale to look for: %+v", shown.Analysis)
	}

	const note = "the caller spelled out her address, 14 Quai Voltaire"
	if r := call(t, s, "POST", "/v1/voiceai/conversations/conv_judged/evaluation/labels", adminKey, `{"verdict_correct":true,"note":"`+note+`"}`); r.Code != 201 {
		t.Fatalf("label: %d %s", r.Code, r.Body)
	}

	js := testenv.JetStreamAt(t, s.NATSURL)
	secret, err := os.ReadFile(filepath.Join(dir, "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := streamMessages(t, js)
	for _, text := range []string{summary, rationale, "Quai Voltaire"} {
		if got := holding(msgs, text); len(got) > 0 {
			t.Fatalf("stream messages hold the analysis' %q in the clear: %v", text, got)
		}
	}
	if doc := replayAnalyses(t, js, msgs, strings.TrimSpace(string(secret)))["ws_default/conv_judged"]; doc.TranscriptSummary != summary {
		t.Fatalf("a replay before the delete does not open the analysis: %+v", doc)
	}
	if doc := replayLabels(t, js, msgs, strings.TrimSpace(string(secret)))["ws_default/conversation/conv_judged"]; doc.Note != note {
		t.Fatalf("a replay before the delete does not open the label's note: %+v", doc)
	}

	if r := call(t, s, "DELETE", "/v1/convai/conversations/conv_judged", adminKey, ""); r.Code != 200 {
		t.Fatalf("delete: %d %s", r.Code, r.Body)
	}
	msgs = streamMessages(t, js)
	if doc, ok := replayLabels(t, js, msgs, strings.TrimSpace(string(secret)))["ws_default/conversation/conv_judged"]; ok {
		t.Fatalf("a replay after the delete opens the label: %+v", doc)
	}
	docs := replayAnalyses(t, js, msgs, strings.TrimSpace(string(secret)))
	if doc, ok := docs["ws_default/conv_judged"]; ok {
		t.Fatalf("a replay after the delete opens the analysis: %+v", doc)
	}
	if doc := docs["ws_default/conv_other"]; len(doc.Criteria) != 2 {
		t.Fatalf("a replay after the delete lost the other conversation's analysis: %+v", doc)
	}
	wantError(t, call(t, s, "POST", "/v1/convai/conversations/conv_judged/analysis/run", adminKey, ""), 404, "conversation_not_found")
	wantError(t, call(t, s, "GET", "/v1/voiceai/conversations/conv_judged/evaluation/labels", adminKey, ""), 404, "conversation_not_found")
	// The label's verdict, in the clear, still counts in the judge report
	// (the conversations row of the agent stays), its note nowhere in it.
	r := call(t, s, "GET", "/v1/voiceai/judge/report", adminKey, "")
	var report wire.JudgeReport
	if err := json.Unmarshal(r.Body, &report); r.Code != 200 || err != nil || report.Labels != 1 || len(report.Judges) != 2 ||
		report.Judges[1].Scope != "conversations" || report.Judges[1].AgentID == nil || *report.Judges[1].AgentID != agent ||
		report.Judges[1].Labels != 1 || strings.Contains(string(r.Body), "Quai Voltaire") {
		t.Fatalf("the judge report after the delete: %d %s", r.Code, r.Body)
	}
	// The offline judge's words are not the conversation's own (the other
	// analysis may say the same): its projected document is what must go.
	analyses := (&testenv.Env{MongoURI: s.MongoURI}).Mongo(t).Database("voiceai_tickets").Collection(adapters.AnalysesCollection)
	eventually(t, 10*time.Second, "the projected analysis is gone", func() bool {
		var doc adapters.AnalysisDoc
		err := analyses.FindOne(context.Background(), bson.D{{Key: "_id", Value: "ws_default/conv_judged"}}).Decode(&doc)
		return errors.Is(err, mongo.ErrNoDocuments) || (err == nil && doc.Deleted && doc.TranscriptSummary == "" && len(doc.Criteria) == 0)
	})
}
