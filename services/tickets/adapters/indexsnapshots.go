package adapters

import (
	"bufio"
	"cmp"
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minio/sio"
	"github.com/nats-io/nats.go/jetstream"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/tick"
)

// SnapshotBucket is the object store bucket of the conversation index's
// snapshot: one object, the newest.
const SnapshotBucket = "tickets_snapshots"

const (
	// snapshotPrefix begins every snapshot's object name; the name goes on
	// with its PLATFORM sequence and a random part, so that replicas
	// writing at once each write their own (see Save).
	snapshotPrefix = "conversation-index-"
	// snapshotKeyOwner is the convseal.Keys "workspace" of the snapshots'
	// keys (no workspace id has its shape).
	snapshotKeyOwner = "_snapshots"
)

// IndexSnapshots keeps the conversation index's newest snapshot in a
// JetStream object store bucket, so that every deployment has it where
// its streams are (replicated like them), sealed (DARE, AES-256-GCM in
// 64 KiB packages, github.com/minio/sio) under a key derived from its
// epoch's key.
//
// An epoch is the PLATFORM sequence of the last deletion the snapshot's
// index had applied; its key lives in the transcript keys' store
// (convseal.Keys) and is destroyed once a later deletion happens. So a
// snapshot never outlives, readable, a deletion of a conversation whose
// words it holds: the deleting request destroys the key of its own
// index's epoch and of every stored snapshot's at once
// (ForgetConversation), and every replica destroys the key of the epoch
// it leaves when the deletion's record reaches it.
//
// Each snapshot is an object of its own: two replicas storing one at the
// same moment each store theirs whole, then each removes all but the
// newest (by PLATFORM sequence, then name), so one remains and no half
// is left behind.
type IndexSnapshots struct {
	Obj  jetstream.ObjectStore
	Keys convseal.Keys
	// Log tells why a stored snapshot was not read (nil: nobody is told).
	Log *slog.Logger

	js     jetstream.JetStream         // set by OpenIndexSnapshots: the bucket
	cfg    jetstream.ObjectStoreConfig // deleted is made again (remake)
	healer eventstore.Healer
}

// snapshotTimeout bounds storing or reading one snapshot (hundreds of
// MiB at a million conversations). Without a deadline of its own the
// client gives an object's whole read its default 5 s.
const snapshotTimeout = 10 * time.Minute

// snapshotChunk is the size of a snapshot's messages. The client keeps up
// to 4,000 of an object's messages unacknowledged: at the default 128
// KiB that is 500 MiB more in memory, at a million conversations, while
// one is stored; at 16 KiB it is 64 MiB.
const snapshotChunk = 16 << 10

// listTries and listTimeout bound listing the snapshots stored.
const (
	listTries   = 3
	listTimeout = 5 * time.Second
)

// OpenIndexSnapshots opens (making it if need be) the snapshots' bucket.
func OpenIndexSnapshots(ctx context.Context, js jetstream.JetStream, replicas int, keys convseal.Keys) (*IndexSnapshots, error) {
	cfg := jetstream.ObjectStoreConfig{
		Bucket:      SnapshotBucket,
		Description: "The tickets service's conversation index, as of one PLATFORM sequence, sealed; what a restart reads instead of the whole stream.",
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
	}
	obj, err := js.CreateOrUpdateObjectStore(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("snapshot bucket: %w", err)
	}
	return &IndexSnapshots{Obj: obj, Keys: keys, Log: slog.New(slog.DiscardHandler), js: js, cfg: cfg}, nil
}

// remake makes the bucket again, empty, when it was deleted under the
// service (a snapshot that failed to be stored says so, through healer):
// left gone, no snapshot was stored until a restart, which then replayed
// the whole stream.
func (s *IndexSnapshots) remake(ctx context.Context) {
	if _, err := s.js.ObjectStore(ctx, s.cfg.Bucket); !errors.Is(err, jetstream.ErrBucketNotFound) {
		return
	}
	if _, err := s.js.CreateObjectStore(ctx, s.cfg); err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
		return
	}
	if s.Log != nil {
		s.Log.Warn("the snapshots' bucket was deleted; made it again, empty", "bucket", s.cfg.Bucket)
	}
}

func epochKeyID(epoch uint64) string { return "conversation_index_" + strconv.FormatUint(epoch, 10) }

// sealConfig is the DARE configuration of one snapshot: its key derived
// from the epoch's key and the snapshot's own salt.
func sealConfig(epochKey, salt []byte) (sio.Config, error) {
	key, err := hkdf.Key(sha256.New, epochKey, salt, "voiceai tickets conversation index snapshot", 32)
	if err != nil {
		return sio.Config{}, err
	}
	return sio.Config{Key: key, MinVersion: sio.Version20}, nil
}

// stored are the snapshots stored, newest (greatest PLATFORM sequence)
// first.
func (s *IndexSnapshots) stored(ctx context.Context) ([]*jetstream.ObjectInfo, error) {
	var all []*jetstream.ObjectInfo
	var err error
	// A listing waits for its watcher's end-of-data mark, which a bucket
	// made a moment ago on a cluster still electing its leaders may never
	// send: each try has its own deadline.
	for range listTries {
		listCtx, cancel := context.WithTimeout(ctx, listTimeout)
		all, err = s.Obj.List(listCtx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			break
		}
	}
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the index snapshots: %w", err)
	}
	all = slices.DeleteFunc(all, func(o *jetstream.ObjectInfo) bool { return !strings.HasPrefix(o.Name, snapshotPrefix) })
	slices.SortFunc(all, func(a, b *jetstream.ObjectInfo) int {
		return cmp.Or(cmp.Compare(metaSeq(b, "platform_seq"), metaSeq(a, "platform_seq")), strings.Compare(b.Name, a.Name))
	})
	return all, nil
}

// metaSeq reads a sequence from a snapshot's metadata (0 when absent).
func metaSeq(o *jetstream.ObjectInfo, field string) uint64 {
	n, _ := strconv.ParseUint(o.Metadata[field], 10, 64)
	return n
}

// Newest is the newest snapshot stored (nil: none); its metadata says
// its "platform_seq", "epoch" and "conversations".
func (s *IndexSnapshots) Newest(ctx context.Context) (*jetstream.ObjectInfo, error) {
	all, err := s.stored(ctx)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	return all[0], nil
}

// Save stores x's snapshot, then removes all but the newest stored.
func (s *IndexSnapshots) Save(ctx context.Context, x *ConversationIndex) (SnapshotState, error) {
	// Changes to the index wait while it is written: a stalled store must
	// not hold them for ever.
	ctx, cancel := context.WithTimeout(ctx, snapshotTimeout)
	defer cancel()
	var st SnapshotState
	var name string
	err := x.Snapshot(func(state SnapshotState, write func(io.Writer) error) error {
		st = state
		epochKey, err := s.Keys.Key(ctx, snapshotKeyOwner, epochKeyID(state.DeletionSeq), true)
		if err != nil {
			return fmt.Errorf("epoch key: %w", err) // a deletion destroyed it: the next snapshot is of a later epoch
		}
		salt := make([]byte, 32)
		if _, err := rand.Read(salt); err != nil {
			return err
		}
		cfg, err := sealConfig(epochKey, salt)
		if err != nil {
			return err
		}
		pr, pw := io.Pipe()
		go func() {
			bw := bufio.NewWriterSize(pw, 1<<20)
			sealed, err := sio.EncryptWriter(bw, cfg)
			if err == nil {
				err = write(sealed)
			}
			if err == nil {
				err = sealed.Close()
			}
			if err == nil {
				err = bw.Flush()
			}
			pw.CloseWithError(err)
		}()
		name = fmt.Sprintf("%s%020d-%s", snapshotPrefix, state.PlatformSeq, hex.EncodeToString(salt[:8]))
		meta := jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: snapshotChunk}, Metadata: map[string]string{
			"epoch":         strconv.FormatUint(state.DeletionSeq, 10),
			"salt":          hex.EncodeToString(salt),
			"platform_seq":  strconv.FormatUint(state.PlatformSeq, 10),
			"conversations": strconv.Itoa(state.Conversations),
		}}
		_, err = s.Obj.Put(ctx, meta, pr)
		_ = pr.CloseWithError(errors.New("snapshot put ended")) // unblocks the writer if Put stopped early
		return err
	})
	if err != nil {
		if s.js != nil {
			s.healer.Heal(err, s.remake) // the next snapshot is stored in the bucket made again
		}
		return st, err
	}
	all, err := s.stored(ctx)
	if err != nil {
		return st, err
	}
	// Every writer keeps the newest alone (its own, or one another
	// replica stored meanwhile), so writers that overlap agree.
	for _, older := range all[min(1, len(all)):] {
		if err := s.Obj.Delete(ctx, older.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return st, err
		}
	}
	return st, nil
}

// Load fills the empty index x from the newest snapshot it can read. ok
// is false when there is none (none stored, or a deletion destroyed their
// keys, or of another layout, or damaged): x is then empty, to be
// replayed.
func (s *IndexSnapshots) Load(ctx context.Context, x *ConversationIndex) (st SnapshotState, ok bool, err error) {
	all, err := s.stored(ctx)
	if err != nil {
		// A start that cannot list them replays the stream instead.
		s.Log.Warn("conversation index snapshots not listed; replaying the platform stream", "err", err)
		return st, false, nil
	}
	for _, o := range all {
		if st, ok, err = s.load(ctx, x, o); ok || err != nil {
			return st, ok, err
		}
	}
	return SnapshotState{}, false, nil
}

func (s *IndexSnapshots) load(ctx context.Context, x *ConversationIndex, o *jetstream.ObjectInfo) (st SnapshotState, ok bool, err error) {
	epoch := metaSeq(o, "epoch")
	salt, err := hex.DecodeString(o.Metadata["salt"])
	if err != nil || len(salt) == 0 {
		return st, false, nil // not one Save wrote
	}
	epochKey, err := s.Keys.Key(ctx, snapshotKeyOwner, epochKeyID(epoch), false)
	if errors.Is(err, convseal.ErrShredded) || errors.Is(err, convseal.ErrNoKey) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	cfg, err := sealConfig(epochKey, salt)
	if err != nil {
		return st, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, snapshotTimeout)
	defer cancel()
	res, err := s.Obj.Get(ctx, o.Name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return st, false, nil // removed meanwhile: a newer one was stored
	}
	if err != nil {
		return st, false, err
	}
	defer res.Close()
	plain, err := sio.DecryptReader(bufio.NewReaderSize(res, 1<<20), cfg)
	if err == nil {
		st, err = x.ReadSnapshot(bufio.NewReaderSize(plain, 1<<16))
	}
	if err == nil && st.DeletionSeq != epoch {
		err = fmt.Errorf("of epoch %d, stored as of %d", st.DeletionSeq, epoch)
	}
	if err != nil {
		x.Reset()
		s.Log.Warn("conversation index snapshot not read", "object", o.Name, "err", err)
		return SnapshotState{}, false, nil
	}
	return st, true, nil
}

// ShredEpoch destroys an epoch's key: its snapshots are unreadable.
func (s *IndexSnapshots) ShredEpoch(ctx context.Context, epoch uint64) error {
	return s.Keys.Shred(ctx, snapshotKeyOwner, epochKeyID(epoch))
}

// IndexSnapshotter keeps a recent snapshot of the index stored: after
// every Every records applied, and soon after a deletion (the stored one
// is then unreadable), never spending more than a quarter of its time at
// it. It is also a conversation forgetter: a deletion destroys the keys
// of the snapshots that hold the conversation before it is answered.
type IndexSnapshotter struct {
	Index *ConversationIndex
	Store *IndexSnapshots
	// Every is how many PLATFORM records call for a new snapshot (0:
	// none is written; deletions still destroy the stored one's key).
	Every uint64
	// Deletions is the PLATFORM sequence of the last deletion recorded in
	// a workspace (PlatformDeletions); nil: a deletion destroys the key of
	// every epoch there is.
	Deletions func(ctx context.Context, workspaceID string) (uint64, error)
	// Hold, when set, says why no snapshot may be written now (the disk
	// nearly full: a snapshot is as large as the index, and would take
	// the room the disk guard keeps for the streams); nil: none is held.
	// A restart meanwhile replays PLATFORM from the last one stored.
	Hold func() error
	Log  *slog.Logger

	last    SnapshotState // the last snapshot stored or loaded
	took    time.Duration // how long it took
	epoch   uint64        // the epoch whose key this process last saw live
	lastEnd time.Time
}

// Loaded tells the snapshotter the index was read from st.
func (s *IndexSnapshotter) Loaded(st SnapshotState) {
	s.last, s.epoch = st, st.DeletionSeq
}

// ForgetConversation implements app.ConversationForgetter. It runs once
// the deletion is recorded, and destroys the keys of the epochs before
// that record: this index's (if it has not applied the record yet) and
// those of the snapshots stored. A snapshot of a later epoch, taken after
// the record, holds nothing of the conversation and stays readable.
func (s *IndexSnapshotter) ForgetConversation(ctx context.Context, workspaceID, _ string) error {
	before := uint64(math.MaxUint64)
	if s.Deletions != nil {
		seq, err := s.Deletions(ctx, workspaceID)
		if err != nil {
			return err
		}
		before = seq
	}
	stored, err := s.Store.stored(ctx)
	if err != nil {
		return err
	}
	epochs := []uint64{s.Index.State().DeletionSeq}
	for _, o := range stored {
		if _, ok := o.Metadata["epoch"]; ok {
			epochs = append(epochs, metaSeq(o, "epoch"))
		}
	}
	var errs []error
	for _, e := range epochs {
		if e < before {
			errs = append(errs, s.Store.ShredEpoch(ctx, e))
		}
	}
	return errors.Join(errs...)
}

// PlatformDeletions reads the last deletion recorded in a workspace from
// the PLATFORM stream (IndexSnapshotter.Deletions).
func PlatformDeletions(js jetstream.JetStream) func(ctx context.Context, workspaceID string) (uint64, error) {
	return func(ctx context.Context, workspaceID string) (uint64, error) {
		subject, err := events.PlatformSubject(workspaceID, ConversationDeletedEvent)
		if err != nil {
			return 0, err
		}
		str, err := js.Stream(ctx, events.PlatformStream)
		if err != nil {
			return 0, err
		}
		msg, err := str.GetLastMsgForSubject(ctx, subject)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return math.MaxUint64, nil // not found: every epoch may hold it
		}
		if err != nil {
			return 0, err
		}
		return msg.Sequence, nil
	}
}

// Run writes snapshots until ctx ends.
func (s *IndexSnapshotter) Run(ctx context.Context) {
	tick.Every(ctx, time.Second, func() { s.Step(ctx, time.Now()) })
}

// Step does what is due at now: destroy the key of an epoch the index
// left, and write a snapshot when one is due.
func (s *IndexSnapshotter) Step(ctx context.Context, now time.Time) {
	st := s.Index.State()
	if st.DeletionSeq != s.epoch {
		if err := s.Store.ShredEpoch(ctx, s.epoch); err != nil {
			s.Log.Error("destroying a snapshot epoch's key failed; will retry", "epoch", s.epoch, "err", err)
			return
		}
		s.epoch = st.DeletionSeq
	}
	if !s.due(st, now) || s.Hold != nil && s.Hold() != nil {
		return
	}
	start := time.Now()
	saved, err := s.Store.Save(ctx, s.Index)
	took := time.Since(start)
	s.lastEnd = now.Add(took) // on now's clock, which due reads
	if err != nil {
		if ctx.Err() == nil {
			s.Log.Warn("conversation index snapshot not stored; will retry", "err", err)
		}
		return
	}
	s.last, s.took = saved, took
	s.Log.Info("conversation index snapshot stored", "platform_seq", saved.PlatformSeq, "conversations", saved.Conversations, "took", s.took)
}

// due says whether a snapshot should be written at now.
func (s *IndexSnapshotter) due(st SnapshotState, now time.Time) bool {
	if s.Every == 0 || st.PlatformSeq <= s.last.PlatformSeq && st.DeletionSeq == s.last.DeletionSeq {
		return false
	}
	if now.Sub(s.lastEnd) < 3*s.took {
		return false // a quarter of the time at most
	}
	return st.PlatformSeq-s.last.PlatformSeq >= s.Every || st.DeletionSeq != s.last.DeletionSeq
}
