package adapters_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/eventlog/memlog"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters"
	"github.com/voiceai-platform/voiceai/services/tickets/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// Deleting a conversation (app.DeleteConversation) on the adapters it
// runs on, in memory: a memory PLATFORM log, the conversation index, the
// transcripts projection and a memory key store. (Here, not in app: app's
// tests link no infrastructure, and these adapters read JetStream records.)

type fixture struct{ app *app.App }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := memory.NewDirectory()
	dir.PutAgent("ws_a", "agent_1")
	dir.PutConversation("ws_a", "conv_1", app.Conversation{AgentID: "agent_1", StartedAt: 1_700_000_000, EndedAt: 1_700_000_060})
	clock := time.Unix(1_800_000_000, 0)
	a := app.New(memlog.New(), memory.NewIndex(), dir, slog.New(slog.DiscardHandler), func() time.Time { return clock })
	a.Cursors = cursor.NewCodec([]byte("k"))
	return &fixture{app: a}
}

func (f *fixture) raise(t *testing.T, conv, comment string) *ticketsv1.Ticket {
	t.Helper()
	qa := principal.Principal{WorkspaceID: "ws_a", UserID: "user_qa", Permissions: []string{"convai_write"}}
	tk, _, err := f.app.Create(context.Background(), principal.Caller{Principal: qa}, app.CreateInput{ConversationID: &conv, QAComment: &comment})
	if err != nil {
		t.Fatalf("raise on %s: %v", conv, err)
	}
	return tk
}

var wantKind = testkit.WantKind

const spoken = "my account number is 99-1234"

// platformLog is the PLATFORM stream in memory: records in order.
type platformLog struct {
	t       *testing.T
	keys    convseal.Keys
	records []eventstore.Record
}

// ingest records an event as the API's ingest does: a transcript sealed.
func (l *platformLog) ingest(ws, event string, at time.Time, data string) eventstore.Record {
	l.t.Helper()
	sealed, err := convseal.SealData(context.Background(), l.keys, ws, json.RawMessage(data))
	if err != nil {
		l.t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"event": event, "timestamp": at.UTC().Format(time.RFC3339Nano), "data": sealed})
	rec := eventstore.Record{Subject: "platform.evt." + ws + "." + event, Data: body, Time: at, Seq: uint64(len(l.records) + 1)}
	l.records = append(l.records, rec)
	return rec
}

// memTranscripts is the transcripts read model over the service's
// projection handler.
type memTranscripts struct {
	handle projection.Handler
	docs   map[string]adapters.TranscriptDoc
}

func (m *memTranscripts) apply(t *testing.T, rec eventstore.Record) {
	id, doc, err := m.handle(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	if id != "" {
		m.docs[id] = doc.(adapters.TranscriptDoc)
	}
}

func (m *memTranscripts) Transcript(_ context.Context, ws, conv string) (json.RawMessage, error) {
	d, ok := m.docs[ws+"/"+conv]
	if !ok || d.Deleted || d.Turns == "" {
		return nil, nil
	}
	return json.RawMessage(d.Turns), nil
}

func (m *memTranscripts) ForgetConversation(_ context.Context, ws, conv string) error {
	delete(m.docs, ws+"/"+conv)
	return nil
}

// removal is the memory removal, also appending the deletion to the log.
type removal struct {
	adapters.MemoryRemoval
	log *platformLog
}

func (r removal) RecordDeleted(ctx context.Context, ws, conv string, at time.Time, by app.Deleter) error {
	msg, err := adapters.DeletedRecord(ws, conv, at, by)
	if err != nil {
		return err
	}
	r.log.records = append(r.log.records, eventstore.Record{Subject: msg.Subject, Header: eventlog.Header(msg.Header), Data: msg.Data, Time: at, Seq: uint64(len(r.log.records) + 1)})
	return r.MemoryRemoval.RecordDeleted(ctx, ws, conv, at, by)
}

// newDeletionFixture is the ticket fixture whose conversations are kept
// by memory adapters: a log, the index, the transcripts, a key store.
func newDeletionFixture(t *testing.T) (*fixture, *convseal.MemoryKeys, *platformLog, *adapters.ConversationIndex, *memTranscripts) {
	f := newFixture(t)
	keys := convseal.NewMemoryKeys()
	log := &platformLog{t: t, keys: keys}
	index := adapters.NewConversationIndex()
	transcripts := &memTranscripts{handle: adapters.TranscriptProjection(keys), docs: map[string]adapters.TranscriptDoc{}}
	f.app.Conversations, f.app.Transcripts = index, transcripts
	f.app.Deletion = app.ConversationDeletion{
		Removal:    removal{MemoryRemoval: adapters.MemoryRemoval{Keys: keys, Index: index}, log: log},
		ReadModels: []app.ConversationForgetter{index, transcripts},
		Deleted:    index.ConversationDeleted,
		Marks:      index,
	}
	return f, keys, log, index, transcripts
}

func TestDeleteConversationShredsAndForgets(t *testing.T) {
	f, keys, log, index, transcripts := newDeletionFixture(t)
	ctx := context.Background()
	at := time.Unix(1_700_000_000, 0)
	for _, conv := range []string{"conv_1", "conv_2"} {
		for _, rec := range []eventstore.Record{
			log.ingest("ws_a", "conversation_started", at, `{"conversation_id":"`+conv+`","agent_id":"agent_1"}`),
			log.ingest("ws_a", "conversation_ended", at.Add(time.Minute), `{"conversation_id":"`+conv+`","agent_id":"agent_1",
				"transcript":[{"role":"user","message":"`+spoken+`"},{"role":"agent","message":"thanks"}]}`),
		} {
			index.Apply(rec)
			transcripts.apply(t, rec)
		}
	}
	for _, rec := range log.records {
		if strings.Contains(string(rec.Data), "99-1234") {
			t.Fatalf("the log holds the transcript in the clear: %s", rec.Data)
		}
	}
	d, err := f.app.GetConversation(ctx, "ws_a", "conv_1")
	if err != nil || !strings.Contains(string(d.Transcript), spoken) || d.MessageCount != 2 {
		t.Fatalf("before delete: %+v, %v", d, err)
	}
	tk := f.raise(t, "conv_1", "wrong refund answer")

	wantKind(t, f.app.DeleteConversation(ctx, principal.In("ws_b"), "conv_1"), apperr.NotFound, "another workspace's delete")
	if err := f.app.DeleteConversation(ctx, principal.In("ws_a"), "conv_1"); err != nil {
		t.Fatal(err)
	}
	wantKind(t, f.app.DeleteConversation(ctx, principal.In("ws_a"), "conv_1"), apperr.NotFound, "a second delete")
	_, err = f.app.GetConversation(ctx, "ws_a", "conv_1")
	wantKind(t, err, apperr.NotFound, "a deleted conversation's get")
	page, err := f.app.ListConversations(ctx, "ws_a", app.ConversationParams{})
	if err != nil || len(page.Conversations) != 1 || page.Conversations[0].ConversationID != "conv_2" {
		t.Fatalf("listing after delete: %+v, %v", page, err)
	}
	if got, _ := transcripts.Transcript(ctx, "ws_a", "conv_1"); got != nil {
		t.Fatalf("the read model still holds the transcript: %s", got)
	}
	if !f.app.ConversationDeleted("ws_a", "conv_1") || f.app.ConversationDeleted("ws_a", "conv_2") {
		t.Error("ConversationDeleted does not tell the deleted conversation")
	}
	if got, _, _ := f.app.Get(ctx, "ws_a", tk.GetTicketId()); got == nil || got.GetConversationIds()[0] != "conv_1" {
		t.Errorf("the ticket on the deleted conversation: %v", got)
	}

	// The log's sealed transcript no longer opens; a replay into new read
	// models sees the conversation deleted, and the other one intact.
	if _, err := keys.Key(ctx, "ws_a", "conv_1", false); err != convseal.ErrShredded {
		t.Fatalf("the key: %v, want ErrShredded", err)
	}
	replayed := adapters.NewConversationIndex()
	rebuilt := &memTranscripts{handle: adapters.TranscriptProjection(keys), docs: map[string]adapters.TranscriptDoc{}}
	for _, rec := range log.records {
		replayed.Apply(rec)
		rebuilt.apply(t, rec)
	}
	if _, ok := replayed.Summary("ws_a", "conv_1"); ok || !replayed.ConversationDeleted("ws_a", "conv_1") {
		t.Error("a replay brings the deleted conversation back")
	}
	if _, ok := replayed.Summary("ws_a", "conv_2"); !ok {
		t.Error("a replay lost the other conversation")
	}
	for id, doc := range rebuilt.docs {
		if strings.Contains(doc.Turns, "99-1234") && id == "ws_a/conv_1" {
			t.Errorf("a rebuilt projection holds the deleted transcript: %+v", doc)
		}
	}
	if doc := rebuilt.docs["ws_a/conv_1"]; !doc.Deleted {
		t.Errorf("the rebuilt transcript of the deleted conversation is %+v, want a tombstone", doc)
	}
	if got, _ := rebuilt.Transcript(ctx, "ws_a", "conv_2"); !strings.Contains(string(got), spoken) {
		t.Errorf("the rebuilt transcript of the other conversation: %s", got)
	}
	// Replaying the events before the deletion's record (a projector
	// behind) keeps nothing either: the key is gone.
	partial := &memTranscripts{handle: adapters.TranscriptProjection(keys), docs: map[string]adapters.TranscriptDoc{}}
	for _, rec := range log.records[:2] {
		partial.apply(t, rec)
	}
	if got, _ := partial.Transcript(ctx, "ws_a", "conv_1"); got != nil {
		t.Errorf("a projector behind the deletion opens the transcript: %s", got)
	}

	// A transcript handed over again for the deleted conversation is not
	// recorded, and the conversation does not come back.
	again := log.ingest("ws_a", "conversation_ended", at.Add(2*time.Minute), `{"conversation_id":"conv_1","agent_id":"agent_1","transcript":[{"role":"user","message":"`+spoken+`"}]}`)
	index.Apply(again)
	if strings.Contains(string(again.Data), "99-1234") {
		t.Errorf("recorded again in the clear: %s", again.Data)
	}
	if _, ok := index.Summary("ws_a", "conv_1"); ok {
		t.Error("a later event brings the deleted conversation back")
	}
}

// A keyed deletion's record carries its command and fingerprint: the
// index the deletion went through, one replayed from the log and one
// restored from a snapshot each answer the request sent again as the
// first was, and refuse its key with another.
func TestKeyedDeletionIsKeptWhereverTheIndexComesFrom(t *testing.T) {
	f, _, log, index, _ := newDeletionFixture(t)
	at := time.Unix(1_700_000_000, 0)
	index.Apply(log.ingest("ws_a", "conversation_started", at, `{"conversation_id":"conv_1","agent_id":"agent_1"}`))
	ctx := esproto.WithRequestDigest(context.Background(), "digest-1")
	caller := principal.Caller{Principal: principal.Principal{WorkspaceID: "ws_a"}, CommandID: "cmd_1"}
	if err := f.app.DeleteConversation(ctx, caller, "conv_1"); err != nil {
		t.Fatal(err)
	}
	replayed := adapters.NewConversationIndex()
	for _, rec := range log.records {
		replayed.Apply(rec)
	}
	var snap bytes.Buffer
	if _, err := replayed.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	restored := adapters.NewConversationIndex()
	if _, err := restored.ReadSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	want := app.DeletionMark{WorkspaceID: "ws_a", ConversationID: "conv_1", RequestDigest: "digest-1"}
	for name, x := range map[string]*adapters.ConversationIndex{"the index": index, "replayed": replayed, "restored": restored} {
		if got, ok := x.DeletedBy("cmd_1"); !ok || got != want {
			t.Errorf("%s: the mark of cmd_1 is %+v, %v", name, got, ok)
		}
		if _, ok := x.DeletedBy("cmd_2"); ok {
			t.Errorf("%s: a command that deleted nothing has a mark", name)
		}
		f.app.Conversations, f.app.Deletion.Marks = x, x
		if err := f.app.DeleteConversation(ctx, caller, "conv_1"); err != nil {
			t.Errorf("%s: the keyed delete sent again: %v", name, err)
		}
		other := esproto.WithRequestDigest(context.Background(), "digest-2")
		if err := f.app.DeleteConversation(other, caller, "conv_1"); apperr.KindOf(err) != apperr.Invalid {
			t.Errorf("%s: the key with another request: %v", name, err)
		}
	}
}

// On the stream a keyed deletion's record is its command's: the same
// keyed delete recorded again (a retry) is stored once, and two keys
// deleting the conversation at once (on two replicas) each keep their
// mark for a replay.
func TestStreamRemovalKeepsEachKeysRecord(t *testing.T) {
	js := testenv.StreamsAt(t, func(ctx context.Context, js jetstream.JetStream, replicas int) error {
		return eventstore.EnsureEventStreams(ctx, js, replicas, events.PlatformStream)
	})
	ctx := t.Context()
	removal := adapters.StreamRemoval{JS: js, Keys: convseal.NewMemoryKeys()}
	at := time.Unix(1_700_000_000, 0)
	first, second := app.Deleter{CommandID: "cmd_1", RequestDigest: "digest-1"}, app.Deleter{CommandID: "cmd_2", RequestDigest: "digest-2"}
	for _, by := range []app.Deleter{first, first, second} {
		if err := removal.RecordDeleted(ctx, "ws_a", "conv_1", at, by); err != nil {
			t.Fatal(err)
		}
	}
	stream, err := js.Stream(ctx, events.PlatformStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 {
		t.Fatalf("the stream holds %d deletion records, want one per key", info.State.Msgs)
	}
	replayed := adapters.NewConversationIndex()
	store := eventstore.New(js, events.PlatformStream)
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		rec, err := store.At(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		replayed.Apply(rec)
	}
	for _, by := range []app.Deleter{first, second} {
		want := app.DeletionMark{WorkspaceID: "ws_a", ConversationID: "conv_1", RequestDigest: by.RequestDigest}
		if got, ok := replayed.DeletedBy(by.CommandID); !ok || got != want {
			t.Errorf("the replayed mark of %s: %+v, %v", by.CommandID, got, ok)
		}
	}
}

// A conversation recorded in the clear (before transcripts were sealed,
// or published straight on the stream) leaves every read model and every
// replay when deleted; its old message keeps the text, the documented
// limit of an append-only log that denies deletes.
func TestDeleteConversationRecordedInTheClear(t *testing.T) {
	f, keys, log, index, transcripts := newDeletionFixture(t)
	ctx := context.Background()
	at := time.Unix(1_700_000_000, 0)
	plain := eventstore.Record{Subject: "platform.evt.ws_a.conversation_ended", Time: at, Seq: 1,
		Data: []byte(`{"event":"conversation_ended","timestamp":"2023-11-14T22:13:20Z","data":{"conversation_id":"conv_old","agent_id":"agent_1","transcript":[{"role":"user","message":"` + spoken + `"}]}}`)}
	log.records = append(log.records, plain)
	index.Apply(plain)
	transcripts.apply(t, plain)
	if got, _ := transcripts.Transcript(ctx, "ws_a", "conv_old"); !strings.Contains(string(got), spoken) {
		t.Fatalf("before delete: %s", got)
	}
	if err := f.app.DeleteConversation(ctx, principal.In("ws_a"), "conv_old"); err != nil {
		t.Fatal(err)
	}
	_, err := f.app.GetConversation(ctx, "ws_a", "conv_old")
	wantKind(t, err, apperr.NotFound, "the deleted conversation's get")
	for _, upTo := range []int{1, len(log.records)} { // a projector behind the record, and a full rebuild
		replayed := adapters.NewConversationIndex()
		rebuilt := &memTranscripts{handle: adapters.TranscriptProjection(keys), docs: map[string]adapters.TranscriptDoc{}}
		for _, rec := range log.records[:upTo] {
			replayed.Apply(rec)
			rebuilt.apply(t, rec)
		}
		if got, _ := rebuilt.Transcript(ctx, "ws_a", "conv_old"); got != nil {
			t.Errorf("replaying %d records projects the deleted transcript: %s", upTo, got)
		}
		if _, ok := replayed.Summary("ws_a", "conv_old"); ok != (upTo == 1) {
			t.Errorf("replaying %d records: listed %v", upTo, ok)
		}
	}
	if !strings.Contains(string(log.records[0].Data), spoken) {
		t.Fatal("the old message was rewritten: the README's limit is out of date")
	}
}
