package adapters

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/btree"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// ConversationIndex holds a summary of every conversation, and per
// workspace a newest-first tree of the conversations holding each index
// term (app.PlatformTerms, app.AnnotationTerms): a page walks the trees
// of the query's smallest group (app.ConversationQuery.Groups) from its
// cursor and stops once it has the page, so a selective filter walks its
// own matches, not the workspace. Numeric filters (duration, numeric data
// values) have trees ordered by value (app.RangeValues): a range that
// holds few conversations is read whole and sorted instead (rangePage).
// It is built from the platform stream and the annotations on TICKETS at
// start, and kept live.
type ConversationIndex struct {
	// mu guards the index. Changes take it through lockToChange, which
	// waits, off mu, while a snapshot is written (read-locked for
	// seconds at a million conversations): a change queued on mu would
	// stop every read until the snapshot ends (a waiting writer blocks new
	// readers).
	mu sync.RWMutex
	// gate is held to start a change or a snapshot; snapshotDone, while a
	// snapshot is being written, closes when it ends.
	gate         sync.Mutex
	snapshotDone chan struct{}
	waiting      atomic.Int32                     // changes waiting for a snapshot (for tests)
	erased       map[string]bool                  // workspace/conversation deleted: never listed again (deletion.go)
	deletedBy    map[string]app.DeletionMark      // command id → what its keyed deletion deleted (deletion.go)
	byID         map[string]*convEntry            // workspace/conversation → entry
	postings     map[string]*btreePostings        // workspace, term (other than a search word) → newest first
	ranges       map[string]*btree.BTreeG[ranged] // workspace, range key → by value
	words        map[string]map[string]*wordList  // workspace → search word → its conversations (convwords.go)
	entries      []*convEntry                     // by ordinal (convEntry.ord), for the word lists
	starts       []int64                          // each entry's start (ms), by ordinal: what orders a second's postings
	names        []string                         // the names entries share, by number (convpacked.go)
	nameIDs      map[string]uint32                // name → its number
	shared       map[string]any                   // the maps and lists entries share (pack)
	// platformSeq is the last PLATFORM record applied, deletionSeq the
	// last deletion's (what a snapshot is taken at, convsnapshot.go).
	platformSeq, deletionSeq uint64
	// rangeFloor is the least bound of rangePage (a test lowers it to
	// have small workspaces take that path too).
	rangeFloor int
}

type convEntry struct {
	c               packedSummary // without its Words: they are in the word lists
	ord             uint32        // its index in entries
	hasWords        bool          // it is in word lists
	platSeq, annSeq uint64
}

type btreePostings = btree.BTreeG[posting]

// ranged is one conversation in a range key's tree, by value, then by
// ordinal (a range is read whole and sorted, so equal values need only
// some order): 16 bytes holding no pointer, which the collector never
// reads, and compared in the node.
type ranged struct {
	v   float64
	ord uint32
}

func byValue(a, b ranged) bool {
	if a.v != b.v {
		return a.v < b.v
	}
	return a.ord < b.ord
}

// posting is one conversation in a term's tree (a dozen per
// conversation: ten million at a million), in 8 bytes holding no pointer
// the collector would have to follow: the second it started in
// (secondOf) and its ordinal. Two postings of different seconds compare
// in the node; within a second, the entries' starts and ids decide.
type posting struct{ sec, ord uint32 }

// pivotOrd marks a posting that stands for a position to walk from
// (termTree.walk): it comes before, newer than, every conversation of
// its second.
const pivotOrd = math.MaxUint32

// secondOf is the second of a start, as the 32 bits of a posting hold it:
// clamped, so a start before 1970 or after 2106 shares the first or the
// last second, and the order within it decides.
func secondOf(startedAtMs int64) uint32 {
	return uint32(min(max(startedAtMs/1000, 0), math.MaxUint32))
}

func postingOf(e *convEntry) posting { return posting{sec: secondOf(e.c.startedAtMs), ord: e.ord} }

// NewConversationIndex returns an empty index.
func NewConversationIndex() *ConversationIndex {
	x := &ConversationIndex{rangeFloor: 1000}
	x.reset()
	return x
}

// newestFirst orders a tree so that ascending iteration is the listing.
func (x *ConversationIndex) newestFirst(a, b posting) bool {
	switch {
	case a.sec != b.sec:
		return a.sec > b.sec
	case a.ord == pivotOrd || b.ord == pivotOrd:
		return b.ord != pivotOrd
	case x.starts[a.ord] != x.starts[b.ord]:
		return x.starts[a.ord] > x.starts[b.ord]
	}
	return x.entries[a.ord].c.id > x.entries[b.ord].c.id
}

func postingKey(workspaceID, term string) string { return workspaceID + "\x1e" + term }

// Record applies a platform event of stream sequence seq; a deletion
// drops the conversation for good.
func (x *ConversationIndex) Record(_ context.Context, seq uint64, ev app.ConversationEvent) error {
	if ev.Name == ConversationDeletedEvent {
		x.lockToChange()
		x.forget(ev.WorkspaceID, ev.ConversationID)
		x.markDeleted(ev.DeletedBy.CommandID, ev.DeletedBy.Mark(ev.WorkspaceID, ev.ConversationID))
		x.applied(seq)
		if seq > x.deletionSeq {
			x.deletionSeq = seq
		}
		x.unlockChanged()
		return nil
	}
	x.change(ev.WorkspaceID, ev.ConversationID, ev.Turns > 0, seq, func(e *convEntry, c *app.ConversationSummary) bool {
		if seq != 0 && seq <= e.platSeq {
			next, changed := c.AppliedLate(ev) // a start after its end
			*c = next
			return changed
		}
		e.platSeq, *c = seq, c.Applied(ev)
		return true
	})
	return nil
}

// Annotate applies the annotations of TICKETS sequence seq.
func (x *ConversationIndex) Annotate(_ context.Context, seq uint64, a *ticketsv1.ConversationAnnotations) error {
	x.change(a.WorkspaceId, a.ConversationId, false, 0, func(e *convEntry, c *app.ConversationSummary) bool {
		if seq <= e.annSeq {
			return false
		}
		e.annSeq, *c = seq, c.Annotated(a)
		return true
	})
	return nil
}

// change runs apply on the conversation's entry (its sequences) and its
// summary, and moves it in the trees: out of those of the terms it lost,
// into those of the terms it gained (out of and into every one when its
// position changed), and into the lists of its transcript's words when
// apply handed one over (newWords). platSeq, when not 0, is the PLATFORM
// record it applies.
func (x *ConversationIndex) change(workspaceID, conversationID string, newWords bool, platSeq uint64, apply func(*convEntry, *app.ConversationSummary) bool) {
	x.lockToChange()
	defer x.unlockChanged()
	x.applied(platSeq)
	key := workspaceID + "/" + conversationID
	if x.erased[key] {
		return // deleted: what a replay or a late event says of it is not kept
	}
	e := x.byID[key]
	if e == nil {
		e = x.addEntry(key, workspaceID, packedSummary{workspace: x.nameID(workspaceID)})
	}
	// apply runs on a copy: the word lists are ordered by the entries'
	// positions, so e keeps its old one until it is out of them.
	next, old := *e, x.summaryOf(e)
	c := old
	if !apply(&next, &c) {
		return
	}
	words := c.Words
	c.Words = nil
	moved := old.Position() != c.Position()
	var keepWords []string
	if moved || newWords {
		keepWords = x.dropWords(workspaceID, e, old.Position())
	}
	next.c = x.pack(c)
	next.c.id = e.c.id // the key's bytes, not another copy
	oldTerms, terms := entryTerms(old), entryTerms(c)
	for _, term := range oldTerms {
		if moved || !slices.Contains(terms, term) {
			if t := x.postings[postingKey(workspaceID, term)]; t != nil {
				t.Delete(postingOf(e))
			}
		}
	}
	gained := terms
	if !moved {
		gained = slices.DeleteFunc(slices.Clone(terms), func(t string) bool { return slices.Contains(oldTerms, t) })
	}
	for k, v := range app.RangeValues(old) {
		if t := x.ranges[postingKey(workspaceID, k)]; t != nil {
			t.Delete(ranged{v: v, ord: e.ord})
		}
	}
	*e = next
	x.starts[e.ord] = e.c.startedAtMs
	for _, term := range gained {
		k := postingKey(workspaceID, term)
		t := x.postings[k]
		if t == nil {
			t = btree.NewG(32, x.newestFirst)
			x.postings[k] = t
		}
		t.ReplaceOrInsert(postingOf(e))
	}
	if !newWords {
		words = keepWords
	}
	if c.Seen {
		x.addWords(workspaceID, e, words)
	}
	for k, v := range app.RangeValues(c) {
		key := postingKey(workspaceID, k)
		t := x.ranges[key]
		if t == nil {
			t = btree.NewG(32, byValue)
			x.ranges[key] = t
		}
		t.ReplaceOrInsert(ranged{v: v, ord: e.ord})
	}
}

// addEntry adds the entry of key (workspace/conversation) with the
// summary p, its id the key's bytes rather than another copy; x.mu is held.
func (x *ConversationIndex) addEntry(key, workspaceID string, p packedSummary) *convEntry {
	p.id = key[len(workspaceID)+1:]
	e := &convEntry{c: p, ord: uint32(len(x.entries))}
	x.byID[key] = e
	x.entries = append(x.entries, e)
	x.starts = append(x.starts, p.startedAtMs)
	return e
}

// lockToChange locks the index to change it, once no snapshot is being
// written; unlockChanged undoes it.
func (x *ConversationIndex) lockToChange() {
	for {
		x.gate.Lock()
		done := x.snapshotDone
		if done == nil {
			x.mu.Lock()
			return
		}
		x.gate.Unlock()
		x.waiting.Add(1)
		<-done
		x.waiting.Add(-1)
	}
}

func (x *ConversationIndex) unlockChanged() {
	x.mu.Unlock()
	x.gate.Unlock()
}

// applied notes that the PLATFORM record seq (0: none) was applied; x.mu
// is held. The platform feed applies its records in order, so the
// greatest is the last.
func (x *ConversationIndex) applied(seq uint64) {
	if seq > x.platformSeq {
		x.platformSeq = seq
	}
}

// entryTerms are the terms c is indexed under, but its search words (an
// entry holds none): recomputed when it changes rather than kept.
func entryTerms(c app.ConversationSummary) []string {
	if !c.Seen {
		return nil // annotations replayed before the conversation: unlisted until it is seen
	}
	return append(app.PlatformTerms(c), app.AnnotationTerms(c)...)
}

// maxShared bounds the values entries share: past it, a new value is
// kept by its entry alone.
const maxShared = 1 << 18

// share is the value already shared under kind and key, else v (shared
// from now on while there is room).
func share[T any](x *ConversationIndex, kind string, v T, key string) T {
	if key == "" {
		return v // none: nil or empty, as it came
	}
	k := kind + "\x1e" + key
	if s, ok := x.shared[k]; ok {
		return s.(T)
	}
	if len(x.shared) < maxShared {
		x.shared[k] = v
	}
	return v
}

// mapKey is a canonical text of a map of strings.
func mapKey(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k)
		b.WriteByte(0x1f)
		b.WriteString(m[k])
		b.WriteByte(0x1e)
	}
	return b.String()
}

// ConversationSummary looks one conversation up.
func (x *ConversationIndex) ConversationSummary(_ context.Context, workspaceID, conversationID string) (app.ConversationSummary, bool, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e, ok := x.byID[workspaceID+"/"+conversationID]
	if !ok || !e.c.seen {
		return app.ConversationSummary{}, false, nil
	}
	return x.summaryOf(e), true, nil
}

// Summary is ConversationSummary for callers with no context (the
// directory).
func (x *ConversationIndex) Summary(workspaceID, conversationID string) (app.ConversationSummary, bool) {
	c, ok, _ := x.ConversationSummary(context.Background(), workspaceID, conversationID)
	return c, ok
}

// ConversationPage walks the trees of the query's smallest group from the
// cursor (or the time bound), newest first, each until it has the page,
// and merges them.
func (x *ConversationIndex) ConversationPage(_ context.Context, q app.ConversationQuery) ([]app.ConversationSummary, bool, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var best []walker
	bestSize := -1
	for _, g := range append(q.Groups(), []string{app.TermAll}) {
		trees, size := make([]walker, 0, len(g)), 0
		for _, term := range g {
			if w, ok := isWordTerm(term); ok {
				if l := x.words[q.WorkspaceID][w]; l != nil {
					trees, size = append(trees, l), size+l.Len()
				}
			} else if t := x.postings[postingKey(q.WorkspaceID, term)]; t != nil {
				trees, size = append(trees, termTree{t}), size+t.Len()
			}
		}
		if bestSize < 0 || size < bestSize {
			best, bestSize = trees, size
		}
	}
	if rows, more, ok := x.rangePage(q, bestSize); ok {
		return rows, more, nil
	}
	// The walk starts at the cursor or just below the "before" bound,
	// whichever is older, and stops at the "after" bound.
	from := app.ConversationPosition{StartedAtMs: 1 << 62}
	if q.StartedBefore != 0 {
		from.StartedAtMs = q.StartedBefore * 1000
	}
	if q.After != nil && q.After.Compare(from) < 0 {
		from = *q.After
	}
	var rows []app.ConversationSummary
	for _, t := range best {
		found := 0
		t.walk(x, from, func(e *convEntry) bool {
			pos := e.c.position()
			if q.After != nil && pos.Compare(*q.After) >= 0 {
				return true // the cursor's own conversation
			}
			if q.StartedAfter != 0 && pos.StartedAtMs <= q.StartedAfter*1000+999 {
				return false // older than the range: nothing further matches
			}
			if !x.matches(q, e) {
				return true
			}
			rows, found = append(rows, x.summaryOf(e)), found+1
			return found <= q.Limit
		})
	}
	if len(best) > 1 {
		slices.SortFunc(rows, func(a, b app.ConversationSummary) int { return b.Position().Compare(a.Position()) })
		rows = slices.CompactFunc(rows, func(a, b app.ConversationSummary) bool { return a.ConversationID == b.ConversationID })
	}
	more := len(rows) > q.Limit
	return rows[:min(len(rows), q.Limit)], more, nil
}

// rangePage answers q from one of its numeric ranges when that range holds
// fewer conversations than a walk in time order would visit: it reads
// the range whole (stopping past a bound), keeps the matches and sorts
// them. The bound, the square root of the page times the workspace, keeps
// either way below it: a range holding more has matches dense enough in
// time that the walk reaches a page sooner. ok is false to walk instead.
func (x *ConversationIndex) rangePage(q app.ConversationQuery, walk int) ([]app.ConversationSummary, bool, bool) {
	all := x.postings[postingKey(q.WorkspaceID, app.TermAll)]
	if all == nil {
		return nil, false, false
	}
	bound := max(x.rangeFloor, int(math.Sqrt(float64((q.Limit+1)*all.Len()))))
	if walk <= bound {
		return nil, false, false // the walk is cheap already
	}
	for _, r := range q.Ranges() {
		t := x.ranges[postingKey(q.WorkspaceID, r.Key)]
		if t == nil {
			return nil, false, true // nobody has the value: nothing matches
		}
		var in []ranged
		t.AscendGreaterOrEqual(ranged{v: r.Lo}, func(it ranged) bool {
			if it.v > r.Hi || len(in) > bound {
				return false
			}
			in = append(in, it)
			return true
		})
		if len(in) > bound {
			continue
		}
		var rows []app.ConversationSummary
		for _, it := range in {
			e := x.entries[it.ord]
			if (q.After == nil || e.c.position().Compare(*q.After) < 0) && x.matches(q, e) {
				rows = append(rows, x.summaryOf(e))
			}
		}
		slices.SortFunc(rows, func(a, b app.ConversationSummary) int { return b.Position().Compare(a.Position()) })
		more := len(rows) > q.Limit
		return rows[:min(len(rows), q.Limit)], more, true
	}
	return nil, false, false
}
