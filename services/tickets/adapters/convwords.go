package adapters

import (
	"slices"
	"sort"
	"strings"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// The search words are most of a conversation's index terms (a call of 25
// turns says 100 to 200 distinct words), so they are kept apart and
// compact: per workspace and word, the ordinals (4 bytes) of the
// conversations saying it, ordered by their listing position; an entry
// keeps no words of its own (a search tests membership in the lists), and
// no list shares memory with a transcript's text.

// wordList is one word's conversations, as ordinals into
// ConversationIndex.entries, oldest listing position first.
type wordList struct{ ords []uint32 }

func (x *ConversationIndex) position(ord uint32) app.ConversationPosition {
	return x.entries[ord].c.Position()
}

// after is the first index of l whose conversation stands after pos.
func (x *ConversationIndex) after(l *wordList, pos app.ConversationPosition) int {
	return sort.Search(len(l.ords), func(i int) bool { return x.position(l.ords[i]).Compare(pos) > 0 })
}

// at is the index of e in l at the position pos, or -1.
func (x *ConversationIndex) at(l *wordList, e *convEntry, pos app.ConversationPosition) int {
	i := sort.Search(len(l.ords), func(i int) bool { return x.position(l.ords[i]).Compare(pos) >= 0 })
	for ; i < len(l.ords) && x.position(l.ords[i]) == pos; i++ {
		if l.ords[i] == e.ord {
			return i
		}
	}
	return -1
}

// addWords puts e (at its current position) in the lists of words.
func (x *ConversationIndex) addWords(workspaceID string, e *convEntry, words []string) {
	lists := x.words[workspaceID]
	if lists == nil {
		lists = map[string]*wordList{}
		x.words[workspaceID] = lists
	}
	pos := e.c.Position()
	for _, w := range words {
		l := lists[w]
		if l == nil {
			l = &wordList{}
			lists[strings.Clone(w)] = l // not a slice of the transcript's text
		}
		// The usual case (a replay, a live call): the newest of the list,
		// found without a search.
		if n := len(l.ords); n == 0 || x.position(l.ords[n-1]).Compare(pos) < 0 {
			l.ords = appendOrd(l.ords, e.ord)
			continue
		}
		if x.at(l, e, pos) >= 0 {
			continue
		}
		if i := x.after(l, pos); i == len(l.ords) {
			l.ords = appendOrd(l.ords, e.ord)
		} else {
			l.ords = slices.Insert(roomForOne(l.ords), i, e.ord)
		}
	}
	e.hasWords = e.hasWords || len(words) > 0
}

// appendOrd appends ord to a list, which when full grows by an eighth
// rather than by append's half to double: the lists are most of the
// index's memory, and a common word's grows to a million.
func appendOrd(ords []uint32, ord uint32) []uint32 {
	return append(roomForOne(ords), ord)
}

// roomForOne is ords with room for one more.
func roomForOne(ords []uint32) []uint32 {
	if len(ords) < cap(ords) {
		return ords
	}
	grown := make([]uint32, len(ords), len(ords)+max(1, len(ords)/8))
	copy(grown, ords)
	return grown
}

// dropWords takes e, which stood at pos, out of every word list of its
// workspace. It reads every list (an entry keeps no words), so it is for
// the rare changes: a deletion, a transcript handed over again, a start
// reported after the end.
func (x *ConversationIndex) dropWords(workspaceID string, e *convEntry, pos app.ConversationPosition) []string {
	if !e.hasWords {
		return nil
	}
	var had []string
	for w, l := range x.words[workspaceID] {
		if i := x.at(l, e, pos); i >= 0 {
			l.ords = append(l.ords[:i], l.ords[i+1:]...)
			had = append(had, w)
			if len(l.ords) == 0 {
				delete(x.words[workspaceID], w)
			}
		}
	}
	e.hasWords = false
	return had
}

// saysWords reports whether e's transcript holds every word.
func (x *ConversationIndex) saysWords(e *convEntry, words []string) bool {
	lists := x.words[e.c.WorkspaceID]
	pos := e.c.Position()
	for _, w := range words {
		l := lists[w]
		if l == nil || x.at(l, e, pos) < 0 {
			return false
		}
	}
	return true
}

// matches is q.Matches(e's summary), the search words tested on the lists.
func (x *ConversationIndex) matches(q app.ConversationQuery, e *convEntry) bool {
	words := q.Words
	q.Words = nil
	return q.Matches(e.c) && (len(words) == 0 || x.saysWords(e, words))
}

// walker is a set of conversations walked newest first: a term's tree or
// a word's list.
type walker interface {
	Len() int
	walk(x *ConversationIndex, from app.ConversationPosition, fn func(*convEntry) bool)
}

// termTree is a term's tree.
type termTree struct{ t *btreePostings }

func (t termTree) Len() int { return t.t.Len() }

func (t termTree) walk(_ *ConversationIndex, from app.ConversationPosition, fn func(*convEntry) bool) {
	t.t.AscendGreaterOrEqual(posting{pivot(from)}, func(p posting) bool { return fn(p.e) })
}

func (l *wordList) Len() int { return len(l.ords) }

func (l *wordList) walk(x *ConversationIndex, from app.ConversationPosition, fn func(*convEntry) bool) {
	for i := x.after(l, from) - 1; i >= 0; i-- {
		if !fn(x.entries[l.ords[i]]) {
			return
		}
	}
}

// isWordTerm says a term is a search word's ("w:" + word).
func isWordTerm(term string) (string, bool) {
	return strings.CutPrefix(term, "w:")
}
