package adapters

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/app/convmodeltest"
)

// restored is an index written to a snapshot and read back before every
// read: what a restart answers.
type restored struct {
	t     *testing.T
	live  *ConversationIndex
	read  *ConversationIndex
	dirty bool
}

func (r *restored) Record(ctx context.Context, seq uint64, ev app.ConversationEvent) error {
	r.dirty = true
	return r.live.Record(ctx, seq, ev)
}

func (r *restored) Annotate(ctx context.Context, seq uint64, a *ticketsv1.ConversationAnnotations) error {
	r.dirty = true
	return r.live.Annotate(ctx, seq, a)
}

func (r *restored) index() *ConversationIndex {
	if r.dirty || r.read == nil {
		r.read, r.dirty = roundTrip(r.t, r.live), false
	}
	return r.read
}

func (r *restored) ConversationPage(ctx context.Context, q app.ConversationQuery) ([]app.ConversationSummary, bool, error) {
	return r.index().ConversationPage(ctx, q)
}

func (r *restored) ConversationSummary(ctx context.Context, ws, id string) (app.ConversationSummary, bool, error) {
	return r.index().ConversationSummary(ctx, ws, id)
}

func roundTrip(t *testing.T, x *ConversationIndex) *ConversationIndex {
	t.Helper()
	var buf bytes.Buffer
	st, err := x.WriteSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	y := NewConversationIndex()
	got, err := y.ReadSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got != st {
		t.Fatalf("read %+v, wrote %+v", got, st)
	}
	return y
}

// An index read from its snapshot answers every listing as the index it
// was taken of (the conversations' conformance suite, read after a
// round trip).
func TestConversationIndexSnapshotConforms(t *testing.T) {
	convmodeltest.Run(t, 600, func(t *testing.T) convmodeltest.Model {
		return &restored{t: t, live: NewConversationIndex()}
	})
}

func recordConversation(t *testing.T, x *ConversationIndex, seq uint64, ws, id, text string) {
	t.Helper()
	at := int64(1_800_000_000_000) + int64(seq)*1000
	if err := x.Record(context.Background(), seq, app.ConversationEvent{Name: "conversation_ended", WorkspaceID: ws, ConversationID: id,
		AgentID: "agent_a", AtMs: at, Turns: 2, Words: app.SearchWords(text)}); err != nil {
		t.Fatal(err)
	}
}

func searchIDs(t *testing.T, x *ConversationIndex, ws string, words ...string) string {
	t.Helper()
	rows, _, err := x.ConversationPage(context.Background(), app.ConversationQuery{WorkspaceID: ws, Words: words, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return pageIDs(rows)
}

// A snapshot keeps the deletions (a late event of a deleted conversation
// stays out after a restart) and none of a deleted conversation's words;
// it carries on from where it was taken: the records after it apply, the
// ones before it change nothing.
func TestConversationIndexSnapshotKeepsDeletionsNotWords(t *testing.T) {
	ctx := context.Background()
	x := NewConversationIndex()
	recordConversation(t, x, 1, "ws_1", "conv_a", "my parcel never arrived")
	recordConversation(t, x, 2, "ws_1", "conv_b", "the secret password is swordfish")
	recordConversation(t, x, 3, "ws_1", "conv_c", "my parcel arrived broken")
	if err := x.Record(ctx, 4, app.ConversationEvent{Name: ConversationDeletedEvent, WorkspaceID: "ws_1", ConversationID: "conv_b"}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := x.WriteSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if st != (SnapshotState{PlatformSeq: 4, DeletionSeq: 4, Conversations: 2}) {
		t.Fatalf("state %+v", st)
	}
	if bytes.Contains(buf.Bytes(), []byte("swordfish")) {
		t.Fatal("the snapshot holds a deleted conversation's word")
	}
	y := NewConversationIndex()
	if _, err := y.ReadSnapshot(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if got := searchIDs(t, y, "ws_1", "parcel"); got != "conv_c,conv_a" {
		t.Fatalf("parcel: %s", got)
	}
	// Records at or before the snapshot's change nothing; a late record
	// of the deleted conversation stays out; later ones apply.
	recordConversation(t, y, 2, "ws_1", "conv_b", "the secret password is swordfish")
	recordConversation(t, y, 3, "ws_1", "conv_c", "something else entirely")
	recordConversation(t, y, 5, "ws_1", "conv_b", "swordfish again")
	recordConversation(t, y, 6, "ws_1", "conv_d", "parcel lost")
	if got := searchIDs(t, y, "ws_1", "swordfish"); got != "" {
		t.Fatalf("swordfish after restore: %s", got)
	}
	if got := searchIDs(t, y, "ws_1", "parcel"); got != "conv_d,conv_c,conv_a" {
		t.Fatalf("parcel after restore: %s", got)
	}
	if !y.ConversationDeleted("ws_1", "conv_b") {
		t.Fatal("the deletion was not kept")
	}
	// A damaged snapshot is refused whole: the index stays empty, to be
	// replayed.
	z := NewConversationIndex()
	if _, err := z.ReadSnapshot(bytes.NewReader(buf.Bytes()[:buf.Len()-10])); err == nil {
		t.Fatal("a truncated snapshot was read")
	}
	if st := z.State(); st != (SnapshotState{}) || searchIDs(t, z, "ws_1", "parcel") != "" {
		t.Fatalf("a refused snapshot left %+v", st)
	}
}

func openSnapshots(t *testing.T) (*IndexSnapshots, jetstream.JetStream) {
	t.Helper()
	js := testenv.JetStreamAt(t, testenv.StartNATS(t))
	s, err := OpenIndexSnapshots(context.Background(), js, 1, convseal.NewMemoryKeys())
	if err != nil {
		t.Fatal(err)
	}
	return s, js
}

// The stored snapshot is sealed: its bytes hold no word of a transcript,
// and once its epoch's key is destroyed it is not read (the index is
// replayed instead).
func TestIndexSnapshotsAreSealedAndShredded(t *testing.T) {
	ctx := context.Background()
	s, _ := openSnapshots(t)
	x := NewConversationIndex()
	for i := range 300 {
		recordConversation(t, x, uint64(i+1), "ws_1", fmt.Sprintf("conv_%03d", i), fmt.Sprintf("order %d swordfish parcel", i))
	}
	st, err := s.Save(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	newest, err := s.Newest(ctx)
	if err != nil || newest == nil {
		t.Fatalf("no snapshot stored (%v)", err)
	}
	stored, err := s.Obj.GetBytes(ctx, newest.Name)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored, []byte("swordfish")) || bytes.Contains(stored, []byte("conv_001")) {
		t.Fatal("the stored snapshot is readable without its key")
	}
	y := NewConversationIndex()
	got, ok, err := s.Load(ctx, y)
	if err != nil || !ok || got != st {
		t.Fatalf("load: %+v %v %v, want %+v", got, ok, err, st)
	}
	if ids := searchIDs(t, y, "ws_1", "swordfish", "7"); ids != "conv_007" {
		t.Fatalf("after load: %q", ids)
	}
	if err := s.ShredEpoch(ctx, st.DeletionSeq); err != nil {
		t.Fatal(err)
	}
	z := NewConversationIndex()
	if _, ok, err := s.Load(ctx, z); ok || err != nil {
		t.Fatalf("a snapshot of a destroyed epoch was read (%v)", err)
	}
	// A new epoch's snapshot needs a new key: the destroyed one is never
	// made again.
	if _, err := s.Save(ctx, x); err == nil {
		t.Fatal("a snapshot was stored under a destroyed epoch's key")
	}
}

// A deletion destroys, before it is answered, the key of the snapshot
// that holds the conversation; the snapshotter then stores a new one of
// the next epoch, which a restart reads, without the conversation.
func TestSnapshotterFollowsDeletions(t *testing.T) {
	ctx := context.Background()
	s, _ := openSnapshots(t)
	x := NewConversationIndex()
	sn := &IndexSnapshotter{Index: x, Store: s, Every: 2, Log: slog.New(slog.DiscardHandler),
		Deletions: func(context.Context, string) (uint64, error) { return 3, nil }}
	now := time.Unix(1_800_000_000, 0)
	recordConversation(t, x, 1, "ws_1", "conv_a", "swordfish parcel")
	recordConversation(t, x, 2, "ws_1", "conv_b", "parcel")
	sn.Step(ctx, now)
	if _, ok, _ := s.Load(ctx, NewConversationIndex()); !ok {
		t.Fatal("no snapshot after Every records")
	}
	// The request path forgets at once (the stream's record comes later).
	if err := x.ForgetConversation(ctx, "ws_1", "conv_a"); err != nil {
		t.Fatal(err)
	}
	if err := sn.ForgetConversation(ctx, "ws_1", "conv_a"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Load(ctx, NewConversationIndex()); ok {
		t.Fatal("the snapshot holding a deleted conversation is still readable")
	}
	if err := x.Record(ctx, 3, app.ConversationEvent{Name: ConversationDeletedEvent, WorkspaceID: "ws_1", ConversationID: "conv_a"}); err != nil {
		t.Fatal(err)
	}
	sn.Step(ctx, now.Add(time.Minute))
	y := NewConversationIndex()
	st, ok, err := s.Load(ctx, y)
	if err != nil || !ok || st.DeletionSeq != 3 || st.Conversations != 1 {
		t.Fatalf("after the deletion: %+v %v %v", st, ok, err)
	}
	if got := searchIDs(t, y, "ws_1", "parcel"); got != "conv_b" {
		t.Fatalf("parcel: %s", got)
	}
	if got := searchIDs(t, y, "ws_1", "swordfish"); got != "" {
		t.Fatalf("swordfish: %s", got)
	}
	// A replica whose index applied the record before the request's own
	// forget (the usual order on the replica that deleted) keeps the new
	// epoch's snapshot: it holds nothing of the conversation.
	if err := sn.ForgetConversation(ctx, "ws_1", "conv_a"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Load(ctx, NewConversationIndex()); !ok || err != nil {
		t.Fatalf("the next epoch's snapshot was destroyed too (%v)", err)
	}
}

// While the disk guard holds writes, no snapshot is written (one is as
// large as the index, and would take the room kept for the streams); one
// is once writes are let through again.
func TestSnapshotterWaitsWhileWritesAreHeld(t *testing.T) {
	ctx := context.Background()
	s, _ := openSnapshots(t)
	x := NewConversationIndex()
	var held atomic.Bool
	held.Store(true)
	sn := &IndexSnapshotter{Index: x, Store: s, Every: 1, Log: slog.New(slog.DiscardHandler),
		Hold: func() error {
			if held.Load() {
				return apperr.StorageFull
			}
			return nil
		}}
	now := time.Unix(1_800_000_000, 0)
	recordConversation(t, x, 1, "ws_1", "conv_a", "parcel")
	sn.Step(ctx, now)
	if _, ok, err := s.Load(ctx, NewConversationIndex()); ok || err != nil {
		t.Fatalf("a snapshot stored while writes are held (%v)", err)
	}
	held.Store(false)
	sn.Step(ctx, now.Add(time.Second))
	if st, ok, err := s.Load(ctx, NewConversationIndex()); !ok || err != nil || st.PlatformSeq != 1 {
		t.Fatalf("once writes are let through: %+v %v %v", st, ok, err)
	}
}

// Replicas storing snapshots at the same time each store theirs whole and
// remove the older ones: the newest remains, alone, and is what a start
// reads.
func TestIndexSnapshotsKeepTheNewest(t *testing.T) {
	ctx := context.Background()
	s, _ := openSnapshots(t)
	behind, ahead := NewConversationIndex(), NewConversationIndex()
	for i := range 5 {
		recordConversation(t, ahead, uint64(i+1), "ws_1", fmt.Sprintf("conv_%d", i), "parcel")
		if i < 3 {
			recordConversation(t, behind, uint64(i+1), "ws_1", fmt.Sprintf("conv_%d", i), "parcel")
		}
	}
	if _, err := s.Save(ctx, ahead); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Save(ctx, behind); err != nil { // a replica still behind
		t.Fatal(err)
	}
	if _, err := s.Save(ctx, ahead); err != nil {
		t.Fatal(err)
	}
	all, err := s.stored(ctx)
	if err != nil || len(all) != 1 || metaSeq(all[0], "platform_seq") != 5 {
		t.Fatalf("stored: %d objects (%v)", len(all), err)
	}
	y := NewConversationIndex()
	if st, ok, err := s.Load(ctx, y); !ok || err != nil || st.Conversations != 5 {
		t.Fatalf("load: %+v %v %v", st, ok, err)
	}
}

// The snapshots' bucket deleted under the service is made again by the
// snapshot that finds it gone: the next one is stored and read.
func TestIndexSnapshotsBucketDeletedIsMadeAgain(t *testing.T) {
	ctx := context.Background()
	s, js := openSnapshots(t)
	x := NewConversationIndex()
	for i := range 3 {
		recordConversation(t, x, uint64(i+1), "ws_1", fmt.Sprintf("conv_%d", i), "parcel")
	}
	if _, err := s.Save(ctx, x); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteObjectStore(ctx, SnapshotBucket); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Save(ctx, x); err == nil {
		t.Fatal("a snapshot stored in a deleted bucket")
	}
	testkit.Eventually(t, 10*time.Second, "a snapshot stored after the bucket was found gone", func() bool {
		_, err := s.Save(ctx, x)
		return err == nil
	})
	y := NewConversationIndex()
	if st, ok, err := s.Load(ctx, y); !ok || err != nil || st.Conversations != 3 {
		t.Fatalf("load: %+v %v %v", st, ok, err)
	}
}

// While a snapshot is written, reads go on: a change waits for the
// snapshot without blocking them, and applies once it is stored.
func TestSnapshotLetsReadsThroughWhileChangesWait(t *testing.T) {
	ctx := context.Background()
	x := NewConversationIndex()
	recordConversation(t, x, 1, "ws_1", "conv_a", "parcel")
	changed := make(chan struct{})
	err := x.Snapshot(func(st SnapshotState, write func(io.Writer) error) error {
		go func() {
			defer close(changed)
			_ = x.Record(ctx, 2, app.ConversationEvent{Name: "conversation_ended", WorkspaceID: "ws_1", ConversationID: "conv_b",
				AgentID: "agent_a", AtMs: 1_800_000_002_000, Turns: 2, Words: app.SearchWords("parcel")})
		}()
		testkit.Eventually(t, 10*time.Second, "the change waits for the snapshot", func() bool { return x.waiting.Load() == 1 })
		if got := searchIDs(t, x, "ws_1", "parcel"); got != "conv_a" {
			return fmt.Errorf("read during the snapshot: %q", got)
		}
		if _, ok, err := x.ConversationSummary(ctx, "ws_1", "conv_a"); !ok || err != nil {
			return fmt.Errorf("summary during the snapshot: %v %v", ok, err)
		}
		return write(io.Discard)
	})
	if err != nil {
		t.Fatal(err)
	}
	<-changed
	if got := searchIDs(t, x, "ws_1", "parcel"); got != "conv_b,conv_a" {
		t.Fatalf("after the snapshot: %q", got)
	}
}

// An entry that names a value or a name its snapshot never defined, or
// that is filed under another workspace, makes the snapshot unreadable
// (the index is then replayed from the stream), not an entry with a nil
// it should not have.
func TestSnapshotEntryRefusesWhatItNeverDefined(t *testing.T) {
	x := NewConversationIndex()
	ws := x.nameID("ws_1")
	good := snapshotEntry{Key: "ws_1/conv_1", Names: [5]uint32{ws}, New: snapshotValues{StringMaps: []map[string]string{{"a": "b"}}}}
	good.Values[slotEvaluations] = 1
	for name, se := range map[string]snapshotEntry{
		"a value not defined": func() snapshotEntry { se := good; se.Values[slotData] = 2; return se }(),
		"a value skipped":     func() snapshotEntry { se := good; se.Values[slotEvaluations] = 2; return se }(),
		"a list not defined":  func() snapshotEntry { se := good; se.Values[slotTags] = 1; return se }(),
		"a name not defined":  func() snapshotEntry { se := good; se.Names[1] = 99; return se }(),
		"another workspace":   func() snapshotEntry { se := good; se.Key = "ws_2/conv_1"; return se }(),
	} {
		r := &entryReader{x: x}
		if _, _, err := r.packed(&se); !errors.Is(err, errSnapshot) {
			t.Errorf("%s: err = %v, want errSnapshot", name, err)
		}
	}
	r := &entryReader{x: x}
	se := good
	key, p, err := r.packed(&se)
	if err != nil || key != "ws_1/conv_1" || p.id != "conv_1" || p.evaluations["a"] != "b" {
		t.Fatalf("the good entry: %q %+v %v", key, p, err)
	}
}

// A snapshot cut short, or one whose entries fail to load, is refused
// whole and leaves the index empty, its decoding stopped.
func TestSnapshotCutShortIsRefused(t *testing.T) {
	x := NewConversationIndex()
	for i := range 2000 {
		recordConversation(t, x, uint64(i+1), "ws_1", fmt.Sprintf("conv_%04d", i), "where is my refund")
	}
	var buf bytes.Buffer
	if _, err := x.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{buf.Len() / 3, buf.Len() / 2, buf.Len() - 10} {
		y := NewConversationIndex()
		if _, err := y.ReadSnapshot(bytes.NewReader(buf.Bytes()[:size])); !errors.Is(err, errSnapshot) {
			t.Errorf("cut at %d of %d: err = %v, want errSnapshot", size, buf.Len(), err)
		}
		if st := y.State(); st.Conversations != 0 || st.PlatformSeq != 0 {
			t.Errorf("cut at %d: the index holds %+v", size, st)
		}
	}
}

// Entries reach load in order; when load fails, the decoding stops and
// the error is returned, with nothing left waiting.
func TestDecodeEntriesStopsWhenALoadFails(t *testing.T) {
	var buf bytes.Buffer
	enc := gob.NewEncoder(&buf)
	for i := range 2000 {
		if err := enc.Encode(&snapshotEntry{Key: fmt.Sprintf("ws_1/conv_%04d", i), PlatSeq: uint64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	var seen []uint64
	err := decodeEntries(gob.NewDecoder(&buf), 2000, func(se *snapshotEntry) error {
		seen = append(seen, se.PlatSeq)
		if len(seen) == 700 {
			return errSnapshot
		}
		return nil
	})
	if !errors.Is(err, errSnapshot) || len(seen) != 700 || seen[699] != 700 {
		t.Fatalf("err %v after %d entries (last %d)", err, len(seen), seen[len(seen)-1])
	}
	seen = nil
	buf.Reset()
	enc = gob.NewEncoder(&buf)
	for i := range 1000 {
		_ = enc.Encode(&snapshotEntry{Key: "k", PlatSeq: uint64(i + 1)})
	}
	if err := decodeEntries(gob.NewDecoder(&buf), 1000, func(se *snapshotEntry) error { seen = append(seen, se.PlatSeq); return nil }); err != nil || len(seen) != 1000 || seen[999] != 1000 {
		t.Fatalf("all: err %v, %d entries", err, len(seen))
	}
}
