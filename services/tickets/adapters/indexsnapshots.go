package adapters

import (
	"bufio"
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/minio/sio"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voiceai-platform/voiceai/pkg/convseal"
)

// SnapshotBucket is the object store bucket of the conversation index's
// snapshot: one object, the newest.
const SnapshotBucket = "tickets_snapshots"

const (
	snapshotObject = "conversation-index"
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
// index's epoch and of the stored snapshot's at once (ForgetConversation),
// and every replica destroys the key of the epoch it leaves when the
// deletion's record reaches it.
type IndexSnapshots struct {
	Obj  jetstream.ObjectStore
	Keys convseal.Keys
}

// OpenIndexSnapshots opens (making it if need be) the snapshots' bucket.
func OpenIndexSnapshots(ctx context.Context, js jetstream.JetStream, replicas int, keys convseal.Keys) (*IndexSnapshots, error) {
	obj, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      SnapshotBucket,
		Description: "The tickets service's conversation index, as of one PLATFORM sequence, sealed; what a restart reads instead of the whole stream.",
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot bucket: %w", err)
	}
	return &IndexSnapshots{Obj: obj, Keys: keys}, nil
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

// Save stores x's snapshot in place of the previous one.
func (s *IndexSnapshots) Save(ctx context.Context, x *ConversationIndex) (SnapshotState, error) {
	var st SnapshotState
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
		meta := jetstream.ObjectMeta{Name: snapshotObject, Metadata: map[string]string{
			"epoch":         strconv.FormatUint(state.DeletionSeq, 10),
			"salt":          hex.EncodeToString(salt),
			"platform_seq":  strconv.FormatUint(state.PlatformSeq, 10),
			"conversations": strconv.Itoa(state.Conversations),
		}}
		_, err = s.Obj.Put(ctx, meta, pr)
		_ = pr.CloseWithError(errors.New("snapshot put ended")) // unblocks the writer if Put stopped early
		return err
	})
	return st, err
}

// Load fills the empty index x from the stored snapshot. ok is false when
// there is none, or it cannot be read (a deletion destroyed its key, it
// is of another layout, it is damaged): x is then empty, to be replayed.
func (s *IndexSnapshots) Load(ctx context.Context, x *ConversationIndex) (st SnapshotState, ok bool, err error) {
	res, err := s.Obj.Get(ctx, snapshotObject)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	defer res.Close()
	info, err := res.Info()
	if err != nil {
		return st, false, err
	}
	epoch, err1 := strconv.ParseUint(info.Metadata["epoch"], 10, 64)
	salt, err2 := hex.DecodeString(info.Metadata["salt"])
	if err := errors.Join(err1, err2); err != nil {
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
	plain, err := sio.DecryptReader(bufio.NewReaderSize(res, 1<<20), cfg)
	if err != nil {
		return st, false, nil
	}
	st, err = x.ReadSnapshot(bufio.NewReaderSize(plain, 1<<16))
	if err != nil || st.DeletionSeq != epoch {
		x.Reset()
		return SnapshotState{}, false, nil
	}
	return st, true, nil
}

// ShredEpoch destroys an epoch's key: its snapshots are unreadable.
func (s *IndexSnapshots) ShredEpoch(ctx context.Context, epoch uint64) error {
	return s.Keys.Shred(ctx, snapshotKeyOwner, epochKeyID(epoch))
}

// shredStored destroys the key of the stored snapshot's epoch.
func (s *IndexSnapshots) shredStored(ctx context.Context) error {
	info, err := s.Obj.GetInfo(ctx, snapshotObject)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	epoch, err := strconv.ParseUint(info.Metadata["epoch"], 10, 64)
	if err != nil {
		return nil // not one Save wrote, so not sealed under an epoch key
	}
	return s.ShredEpoch(ctx, epoch)
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
	Log   *slog.Logger

	last    SnapshotState // the last snapshot stored or loaded
	took    time.Duration // how long it took
	epoch   uint64        // the epoch whose key this process last saw live
	lastEnd time.Time
}

// Loaded tells the snapshotter the index was read from st.
func (s *IndexSnapshotter) Loaded(st SnapshotState) {
	s.last, s.epoch = st, st.DeletionSeq
}

// ForgetConversation implements app.ConversationForgetter.
func (s *IndexSnapshotter) ForgetConversation(ctx context.Context, _, _ string) error {
	return errors.Join(s.Store.ShredEpoch(ctx, s.Index.State().DeletionSeq), s.Store.shredStored(ctx))
}

// Run writes snapshots until ctx ends.
func (s *IndexSnapshotter) Run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s.Step(ctx, time.Now())
	}
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
	if !s.due(st, now) {
		return
	}
	start := time.Now()
	saved, err := s.Store.Save(ctx, s.Index)
	s.lastEnd = time.Now()
	if err != nil {
		if ctx.Err() == nil {
			s.Log.Warn("conversation index snapshot not stored; will retry", "err", err)
		}
		return
	}
	s.last, s.took = saved, s.lastEnd.Sub(start)
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
