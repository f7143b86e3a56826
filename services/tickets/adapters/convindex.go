package adapters

import (
	"context"
	"math"
	"slices"
	"sync"

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
	mu       sync.RWMutex
	erased   map[string]bool       // workspace/conversation deleted: never listed again (deletion.go)
	byID     map[string]*convEntry // workspace/conversation → entry
	postings map[string]*btree.BTreeG[posting]
	ranges   map[string]*btree.BTreeG[ranged] // workspace, range key → by value
	// rangeFloor is the least bound of rangePage (a test lowers it to
	// have small workspaces take that path too).
	rangeFloor int
}

type convEntry struct {
	c               app.ConversationSummary
	terms           []string
	values          map[string]float64 // app.RangeValues of c
	platSeq, annSeq uint64
}

// ranged is one conversation in a range key's tree.
type ranged struct {
	v   float64
	pos app.ConversationPosition
	e   *convEntry
}

func byValue(a, b ranged) bool {
	if a.v != b.v {
		return a.v < b.v
	}
	return a.pos.Compare(b.pos) < 0
}

// posting is one conversation in a term's tree.
type posting struct {
	pos app.ConversationPosition
	e   *convEntry
}

// NewConversationIndex returns an empty index.
func NewConversationIndex() *ConversationIndex {
	return &ConversationIndex{byID: map[string]*convEntry{}, postings: map[string]*btree.BTreeG[posting]{}, ranges: map[string]*btree.BTreeG[ranged]{}, rangeFloor: 1000}
}

// newestFirst orders a tree so that ascending iteration is the listing.
func newestFirst(a, b posting) bool { return a.pos.Compare(b.pos) > 0 }

func postingKey(workspaceID, term string) string { return workspaceID + "\x1e" + term }

// Record applies a platform event of stream sequence seq; a deletion
// drops the conversation for good.
func (x *ConversationIndex) Record(_ context.Context, seq uint64, ev app.ConversationEvent) error {
	if ev.Name == ConversationDeletedEvent {
		x.mu.Lock()
		x.forget(ev.WorkspaceID, ev.ConversationID)
		x.mu.Unlock()
		return nil
	}
	x.change(ev.WorkspaceID, ev.ConversationID, func(e *convEntry) bool {
		if seq != 0 && seq <= e.platSeq {
			return false
		}
		e.platSeq, e.c = seq, e.c.Applied(ev)
		return true
	})
	return nil
}

// Annotate applies the annotations of TICKETS sequence seq.
func (x *ConversationIndex) Annotate(_ context.Context, seq uint64, a *ticketsv1.ConversationAnnotations) error {
	x.change(a.WorkspaceId, a.ConversationId, func(e *convEntry) bool {
		if seq <= e.annSeq {
			return false
		}
		e.annSeq, e.c = seq, e.c.Annotated(a)
		return true
	})
	return nil
}

// change runs apply on the conversation's entry and moves it in the
// trees: out of every one under its old position and terms, into those of
// its new ones.
func (x *ConversationIndex) change(workspaceID, conversationID string, apply func(*convEntry) bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	key := workspaceID + "/" + conversationID
	if x.erased[key] {
		return // deleted: what a replay or a late event says of it is not kept
	}
	e := x.byID[key]
	if e == nil {
		e = &convEntry{c: app.ConversationSummary{WorkspaceID: workspaceID, ConversationID: conversationID}}
		x.byID[key] = e
	}
	old := posting{pos: e.c.Position(), e: e}
	if !apply(e) {
		return
	}
	for _, term := range e.terms {
		if t := x.postings[postingKey(workspaceID, term)]; t != nil {
			t.Delete(old)
		}
	}
	e.terms = append(app.PlatformTerms(e.c), app.AnnotationTerms(e.c)...)
	if !e.c.Seen {
		e.terms = nil // annotations replayed before the conversation: unlisted until it is seen
	}
	now := posting{pos: e.c.Position(), e: e}
	for _, term := range e.terms {
		k := postingKey(workspaceID, term)
		t := x.postings[k]
		if t == nil {
			t = btree.NewG(32, newestFirst)
			x.postings[k] = t
		}
		t.ReplaceOrInsert(now)
	}
	for k, v := range e.values {
		if t := x.ranges[postingKey(workspaceID, k)]; t != nil {
			t.Delete(ranged{v: v, pos: old.pos})
		}
	}
	e.values = app.RangeValues(e.c)
	for k, v := range e.values {
		key := postingKey(workspaceID, k)
		t := x.ranges[key]
		if t == nil {
			t = btree.NewG(32, byValue)
			x.ranges[key] = t
		}
		t.ReplaceOrInsert(ranged{v: v, pos: now.pos, e: e})
	}
}

// ConversationSummary looks one conversation up.
func (x *ConversationIndex) ConversationSummary(_ context.Context, workspaceID, conversationID string) (app.ConversationSummary, bool, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e, ok := x.byID[workspaceID+"/"+conversationID]
	if !ok || !e.c.Seen {
		return app.ConversationSummary{}, false, nil
	}
	return e.c, true, nil
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
	var best []*btree.BTreeG[posting]
	bestSize := -1
	for _, g := range append(q.Groups(), []string{app.TermAll}) {
		trees, size := make([]*btree.BTreeG[posting], 0, len(g)), 0
		for _, term := range g {
			if t := x.postings[postingKey(q.WorkspaceID, term)]; t != nil {
				trees, size = append(trees, t), size+t.Len()
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
		t.AscendGreaterOrEqual(posting{pos: from}, func(p posting) bool {
			if q.After != nil && p.pos.Compare(*q.After) >= 0 {
				return true // the cursor's own conversation
			}
			if q.StartedAfter != 0 && p.pos.StartedAtMs <= q.StartedAfter*1000+999 {
				return false // older than the range: nothing further matches
			}
			if !q.Matches(p.e.c) {
				return true
			}
			rows, found = append(rows, p.e.c), found+1
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
		t.AscendGreaterOrEqual(ranged{v: r.Lo, pos: app.ConversationPosition{StartedAtMs: math.MinInt64}}, func(it ranged) bool {
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
			if (q.After == nil || it.pos.Compare(*q.After) < 0) && q.Matches(it.e.c) {
				rows = append(rows, it.e.c)
			}
		}
		slices.SortFunc(rows, func(a, b app.ConversationSummary) int { return b.Position().Compare(a.Position()) })
		more := len(rows) > q.Limit
		return rows[:min(len(rows), q.Limit)], more, true
	}
	return nil, false, false
}
