package adapters

import (
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/google/btree"

	"github.com/voiceai-platform/voiceai/services/tickets/adapters/ordlist"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// A snapshot of the conversation index is what a restart reads instead of
// replaying PLATFORM from its first record and opening every sealed
// transcript again: every entry, the search words' lists and the
// deletions, as of one PLATFORM sequence; the records after it are then
// replayed as usual. Entries and lists are streamed one by one (gob), so
// writing or reading one costs no second copy of the index in memory.
//
// It holds transcripts' words, so it is only ever stored sealed (see
// IndexSnapshots), under a key that a deletion destroys.

// snapshotVersion names the layout; a snapshot of another one is not read
// (the index is replayed from the stream instead).
const snapshotVersion = 2

// snapshotHeader opens a snapshot.
type snapshotHeader struct {
	Version int
	// PlatformSeq is the last PLATFORM record applied; DeletionSeq the
	// last deletion's (its epoch, see IndexSnapshots).
	PlatformSeq, DeletionSeq uint64
	Entries                  int
	Erased                   []string // workspace/conversation deleted
	Names                    []string // the index's name table (convpacked.go), which entries number into
	// DeletedBy is what each keyed deletion deleted, by command id (absent
	// from snapshots taken before deletions were keyed).
	DeletedBy map[string]app.DeletionMark
}

// snapshotWords is one workspace's word lists, or a part of them (a
// workspace's lists come in chunks of at most wordsPerChunk words); an
// empty WorkspaceID ends the snapshot.
type snapshotWords struct {
	WorkspaceID string
	Words       []string
	Lists       [][]byte // each word's ordinals, as varint deltas
}

const wordsPerChunk = 4096

// SnapshotState is what a snapshot was taken at.
type SnapshotState struct {
	PlatformSeq, DeletionSeq uint64
	Conversations            int
}

// Snapshot calls save with the index's state and a function that writes
// the index as of that state. The index is read-locked meanwhile: reads
// go on, changes wait (lockToChange).
func (x *ConversationIndex) Snapshot(save func(SnapshotState, func(io.Writer) error) error) error {
	done := make(chan struct{})
	x.gate.Lock()
	x.snapshotDone = done
	x.gate.Unlock()
	defer func() {
		x.gate.Lock()
		x.snapshotDone = nil
		close(done)
		x.gate.Unlock()
	}()
	x.mu.RLock()
	defer x.mu.RUnlock()
	return save(x.state(), x.writeSnapshot)
}

// WriteSnapshot writes the index to w.
func (x *ConversationIndex) WriteSnapshot(w io.Writer) (SnapshotState, error) {
	var st SnapshotState
	err := x.Snapshot(func(s SnapshotState, write func(io.Writer) error) error {
		st = s
		return write(w)
	})
	return st, err
}

// State is what a snapshot taken now would be taken at.
func (x *ConversationIndex) State() SnapshotState {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.state()
}

func (x *ConversationIndex) state() SnapshotState {
	return SnapshotState{PlatformSeq: x.platformSeq, DeletionSeq: x.deletionSeq, Conversations: len(x.byID)}
}

// writeSnapshot writes the index to w; x.mu is held.
func (x *ConversationIndex) writeSnapshot(w io.Writer) error {
	// Deleted conversations leave holes in entries: the snapshot numbers
	// the live ones densely, and the lists say the new numbers.
	dense := make([]uint32, len(x.entries))
	live := 0
	for ord, e := range x.entries {
		if e != nil {
			dense[ord] = uint32(live)
			live++
		}
	}
	enc := gob.NewEncoder(w)
	h := snapshotHeader{Version: snapshotVersion, PlatformSeq: x.platformSeq, DeletionSeq: x.deletionSeq, Entries: live,
		Erased: slices.Sorted(maps.Keys(x.erased)), DeletedBy: x.deletedBy, Names: x.names}
	if err := enc.Encode(h); err != nil {
		return err
	}
	// One entry and one chunk are reused throughout, and a chunk's lists
	// share one buffer: at a million conversations, values made afresh
	// for each would be about a gigabyte of garbage while the index
	// holds its own memory.
	ew := newEntryWriter(x)
	for _, e := range x.entries {
		if e == nil {
			continue
		}
		if err := enc.Encode(ew.entry(e)); err != nil {
			return err
		}
	}
	var chunk snapshotWords
	var buf []byte
	var ords []uint32 // one list's, reused
	flush := func() error {
		if len(chunk.Words) == 0 {
			return nil
		}
		err := enc.Encode(&chunk)
		chunk.Words, chunk.Lists, buf = chunk.Words[:0], chunk.Lists[:0], buf[:0]
		return err
	}
	for _, ws := range slices.Sorted(maps.Keys(x.words)) {
		lists := x.words[ws]
		chunk.WorkspaceID = ws
		for _, word := range slices.Sorted(maps.Keys(lists)) {
			start := len(buf)
			ords = lists[word].ords.AppendTo(ords[:0])
			buf = appendDeltas(buf, ords, dense)
			chunk.Words = append(chunk.Words, word)
			chunk.Lists = append(chunk.Lists, buf[start:len(buf):len(buf)])
			if len(chunk.Words) == wordsPerChunk || len(buf) >= chunkBytes {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
	}
	return enc.Encode(snapshotWords{})
}

// chunkBytes bounds a chunk's lists: a common word's list alone is a few
// MiB at a million conversations.
const chunkBytes = 1 << 20

// appendDeltas appends a list's ordinals, renumbered, as varint
// differences (a list is in listing order, which is nearly the order
// conversations arrived in: most differences take a byte or two).
func appendDeltas(out []byte, ords []uint32, dense []uint32) []byte {
	prev := int64(0)
	for _, o := range ords {
		n := int64(dense[o])
		out = binary.AppendVarint(out, n-prev)
		prev = n
	}
	return out
}

// errSnapshot says a snapshot is not one this index reads.
var errSnapshot = errors.New("conversation index snapshot unreadable")

// ReadSnapshot fills an empty index from a snapshot WriteSnapshot wrote.
// On an error the index is left empty, to be replayed from the stream.
func (x *ConversationIndex) ReadSnapshot(r io.Reader) (SnapshotState, error) {
	x.lockToChange()
	defer x.unlockChanged()
	if len(x.entries) != 0 || len(x.erased) != 0 {
		return SnapshotState{}, fmt.Errorf("%w: the index is not empty", errSnapshot)
	}
	st, err := x.readSnapshot(gob.NewDecoder(r))
	if err != nil {
		x.reset()
		return SnapshotState{}, err
	}
	return st, nil
}

func (x *ConversationIndex) readSnapshot(dec *gob.Decoder) (SnapshotState, error) {
	var h snapshotHeader
	if err := dec.Decode(&h); err != nil {
		return SnapshotState{}, fmt.Errorf("%w: %w", errSnapshot, err)
	}
	if h.Version != snapshotVersion || h.Entries < 0 {
		return SnapshotState{}, fmt.Errorf("%w: version %d", errSnapshot, h.Version)
	}
	if len(h.Names) == 0 || h.Names[0] != "" {
		return SnapshotState{}, fmt.Errorf("%w: a name table that does not start with none", errSnapshot)
	}
	x.names, x.nameIDs = h.Names, make(map[string]uint32, len(h.Names))
	for i, name := range h.Names {
		x.nameIDs[name] = uint32(i)
	}
	x.erased = make(map[string]bool, len(h.Erased))
	for _, k := range h.Erased {
		x.erased[k] = true
	}
	x.deletedBy = h.DeletedBy
	x.entries, x.starts = make([]*convEntry, 0, h.Entries), make([]int64, 0, h.Entries)
	ld := loading{postings: map[string]map[string][]posting{}, ranges: map[string]map[string][]ranged{}}
	er := &entryReader{x: x}
	err := decodeEntries(dec, h.Entries, func(se *snapshotEntry) error {
		key, p, err := er.packed(se)
		if err != nil {
			return err
		}
		if x.byID[key] != nil {
			return fmt.Errorf("%w: entry %q twice", errSnapshot, key)
		}
		x.load(key, p, se, &ld)
		return nil
	})
	if err != nil {
		return SnapshotState{}, err
	}
	x.plant(&ld)
	var ords []uint32  // one list's, reused
	var scratch []byte // one list's bytes, reused
	for {
		var chunk snapshotWords
		if err := dec.Decode(&chunk); err != nil {
			return SnapshotState{}, fmt.Errorf("%w: %w", errSnapshot, err)
		}
		if chunk.WorkspaceID == "" {
			break
		}
		if len(chunk.Lists) != len(chunk.Words) {
			return SnapshotState{}, fmt.Errorf("%w: %d words, %d lists", errSnapshot, len(chunk.Words), len(chunk.Lists))
		}
		lists := x.words[chunk.WorkspaceID]
		if lists == nil {
			lists = map[string]*wordList{}
			x.words[chunk.WorkspaceID] = lists
		}
		for i, word := range chunk.Words {
			var err error
			if ords, err = undeltas(ords[:0], chunk.Lists[i], len(x.entries)); err != nil {
				return SnapshotState{}, err
			}
			l := &wordList{}
			l.ords, scratch = ordlist.Of(ords, scratch)
			lists[word] = l
		}
	}
	x.platformSeq, x.deletionSeq = h.PlatformSeq, h.DeletionSeq
	return SnapshotState{PlatformSeq: h.PlatformSeq, DeletionSeq: h.DeletionSeq, Conversations: len(x.entries)}, nil
}

// decodeEntries decodes n entries and hands each to load, in order. The
// decoding runs on a goroutine of its own, a batch or two ahead: it was
// half of a snapshot's read in BenchmarkConversationIndexSnapshot (less
// in a restart after a kill, where other work holds the second core). The batches
// are reused (an entry made afresh for each of a million was garbage).
// It returns once that goroutine has stopped: dec is read on after.
func decodeEntries(dec *gob.Decoder, n int, load func(*snapshotEntry) error) error {
	const batchSize, batches = 256, 3
	type batch struct {
		entries []snapshotEntry
		err     error
	}
	full, free, stop := make(chan *batch, batches), make(chan *batch, batches), make(chan struct{})
	for range batches {
		free <- &batch{entries: make([]snapshotEntry, 0, batchSize)}
	}
	go func() {
		defer close(full)
		for left := n; left > 0; {
			var b *batch
			select {
			case <-stop:
				return
			case b = <-free:
			}
			b.entries, b.err = b.entries[:min(batchSize, left)], nil
			for i := range b.entries {
				b.entries[i] = snapshotEntry{} // gob leaves what an entry does not say as it was
				if err := dec.Decode(&b.entries[i]); err != nil {
					b.entries, b.err = b.entries[:i], fmt.Errorf("%w: %w", errSnapshot, err)
					full <- b
					return
				}
			}
			left -= len(b.entries)
			full <- b
		}
	}()
	var err error
	for b := range full { // to its end, so the decoder never waits on a reader gone
		failed := err != nil
		for i := range b.entries {
			if err == nil {
				err = load(&b.entries[i])
			}
		}
		if err == nil {
			err = b.err
		}
		if err != nil && !failed {
			close(stop)
		}
		free <- b
	}
	return err
}

// loading is what a snapshot's entries put in each tree, by workspace
// and term (or range key), while it is read: plant builds each tree from
// its items sorted. Inserted in order, items walk one path of a tree, in
// cache; in the entries' order, each walked a path of its own through a
// gigabyte (5 of the 22 CPU seconds of reading a million conversations'
// snapshot).
type loading struct {
	postings map[string]map[string][]posting
	ranges   map[string]map[string][]ranged
}

// load adds one entry of a snapshot, its trees' items to ld; its words
// come after.
func (x *ConversationIndex) load(key string, p packedSummary, se *snapshotEntry, ld *loading) {
	ws := x.names[p.workspace]
	e := x.addEntry(key, ws, p)
	e.hasWords, e.platSeq, e.annSeq = se.HasWords, se.PlatSeq, se.AnnSeq
	c := x.summaryOf(e)
	terms := ld.postings[ws]
	if terms == nil {
		terms = map[string][]posting{}
		ld.postings[ws] = terms
	}
	for _, term := range entryTerms(c) {
		terms[term] = append(terms[term], postingOf(e))
	}
	keys := ld.ranges[ws]
	if keys == nil {
		keys = map[string][]ranged{}
		ld.ranges[ws] = keys
	}
	for k, v := range app.RangeValues(c) {
		keys[k] = append(keys[k], ranged{v: v, ord: e.ord})
	}
}

// plant builds the trees of what load gathered, each from its items
// sorted, and lets go of each list once its tree is built.
func (x *ConversationIndex) plant(ld *loading) {
	for ws, terms := range ld.postings {
		for term, items := range terms {
			x.postings[postingKey(ws, term)] = treeOf(items, x.newestFirst)
			delete(terms, term)
		}
	}
	for ws, keys := range ld.ranges {
		for k, items := range keys {
			x.ranges[postingKey(ws, k)] = treeOf(items, byValue)
			delete(keys, k)
		}
	}
}

// treeOf is a tree of items, inserted in its order.
func treeOf[T any](items []T, less btree.LessFunc[T]) *btree.BTreeG[T] {
	slices.SortFunc(items, func(a, b T) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	t := btree.NewG(32, less)
	for _, it := range items {
		t.ReplaceOrInsert(it)
	}
	return t
}

// undeltas appends to ords a list appendDeltas wrote; every ordinal must
// name one of the n entries.
func undeltas(ords []uint32, b []byte, n int) ([]uint32, error) {
	prev := int64(0)
	for len(b) > 0 {
		d, k := binary.Varint(b)
		if k <= 0 {
			return nil, fmt.Errorf("%w: a word list does not parse", errSnapshot)
		}
		prev += d
		if prev < 0 || prev >= int64(n) {
			return nil, fmt.Errorf("%w: a word list names entry %d of %d", errSnapshot, prev, n)
		}
		ords = append(ords, uint32(prev))
		b = b[k:]
	}
	return ords, nil
}

// Reset empties the index, to be replayed from the stream's first record.
func (x *ConversationIndex) Reset() {
	x.lockToChange()
	defer x.unlockChanged()
	x.reset()
}

// reset empties the index; x.mu is held.
func (x *ConversationIndex) reset() {
	x.byID, x.postings, x.ranges = map[string]*convEntry{}, map[string]*btreePostings{}, map[string]*btree.BTreeG[ranged]{}
	x.words, x.shared = map[string]map[string]*wordList{}, map[string]any{}
	x.names, x.nameIDs = []string{""}, map[string]uint32{"": 0} // a new entry's zero names none
	x.entries, x.starts, x.erased, x.deletedBy, x.platformSeq, x.deletionSeq = nil, nil, nil, nil, 0, 0
}
