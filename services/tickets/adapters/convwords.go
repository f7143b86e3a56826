package adapters

import (
	"cmp"
	"strings"

	"github.com/voiceai-platform/voiceai/services/tickets/adapters/ordlist"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// The search words are most of a conversation's index terms (a call of 25
// turns says 100 to 200 distinct words), so they are kept apart and
// compact: per workspace and word, the ordinals of the conversations
// saying it, ordered by their listing position, compressed (ordlist.go:
// a byte or two each); an entry keeps no words of its own (a search tests
// membership in the lists), and no list shares memory with a transcript's
// text.

// wordList is one word's conversations, as ordinals into
// ConversationIndex.entries, oldest listing position first.
type wordList struct{ ords ordlist.List }

// compareAt compares the position of the entry ord with pos: its start
// from the dense starts, its id (read from the entry) only on a tie.
func (x *ConversationIndex) compareAt(ord uint32, pos app.ConversationPosition) int {
	if s := x.starts[ord]; s != pos.StartedAtMs {
		return cmp.Compare(s, pos.StartedAtMs)
	}
	return strings.Compare(x.entries[ord].c.id, pos.ID)
}

// after is the cursor of l's first conversation that stands after pos.
func (x *ConversationIndex) after(l *wordList, pos app.ConversationPosition) ordlist.Cursor {
	return l.ords.Search(func(o uint32) bool { return x.compareAt(o, pos) > 0 })
}

// at is the cursor of e in l at the position pos, if it is there; if not,
// the cursor of the first conversation after pos (where e would go).
func (x *ConversationIndex) at(l *wordList, e *convEntry, pos app.ConversationPosition) (ordlist.Cursor, bool) {
	found := false
	c := l.ords.Seek(func(o uint32) bool { return x.compareAt(o, pos) >= 0 }, func(o uint32) bool {
		found = o == e.ord
		return !found && x.compareAt(o, pos) == 0
	})
	return c, found
}

// addWords puts e (at its current position) in the lists of words.
func (x *ConversationIndex) addWords(workspaceID string, e *convEntry, words []string) {
	lists := x.words[workspaceID]
	if lists == nil {
		lists = map[string]*wordList{}
		x.words[workspaceID] = lists
	}
	pos := e.c.position()
	for _, w := range words {
		l := lists[w]
		if l == nil {
			l = &wordList{}
			lists[strings.Clone(w)] = l // not a slice of the transcript's text
		}
		// The usual case (a replay, a live call): the newest of the list,
		// found without a search.
		if l.ords.Len() == 0 || x.compareAt(l.ords.Last(), pos) < 0 {
			l.ords.Append(e.ord)
			continue
		}
		if c, ok := x.at(l, e, pos); !ok {
			l.ords.Insert(c, e.ord)
		}
	}
	e.hasWords = e.hasWords || len(words) > 0
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
		if c, ok := x.at(l, e, pos); ok {
			l.ords.Remove(c)
			had = append(had, w)
			if l.ords.Len() == 0 {
				delete(x.words[workspaceID], w)
			}
		}
	}
	e.hasWords = false
	return had
}

// saysWords reports whether e's transcript holds every word.
func (x *ConversationIndex) saysWords(e *convEntry, words []string) bool {
	lists := x.words[x.names[e.c.workspace]]
	pos := e.c.position()
	for _, w := range words {
		l := lists[w]
		if l == nil {
			return false
		}
		if _, ok := x.at(l, e, pos); !ok {
			return false
		}
	}
	return true
}

// matches is q.Matches(e's summary), the search words tested on the lists.
func (x *ConversationIndex) matches(q app.ConversationQuery, e *convEntry) bool {
	words := q.Words
	q.Words = nil
	return q.Matches(x.summaryOf(e)) && (len(words) == 0 || x.saysWords(e, words))
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

func (t termTree) walk(x *ConversationIndex, from app.ConversationPosition, fn func(*convEntry) bool) {
	// The pivot stands before from's whole second: what of that second
	// is newer than from is skipped.
	t.t.AscendGreaterOrEqual(posting{sec: secondOf(from.StartedAtMs), ord: pivotOrd}, func(p posting) bool {
		e := x.entries[p.ord]
		return e.c.position().Compare(from) > 0 || fn(e)
	})
}

func (l *wordList) Len() int { return l.ords.Len() }

func (l *wordList) walk(x *ConversationIndex, from app.ConversationPosition, fn func(*convEntry) bool) {
	l.ords.Backward(x.after(l, from), func(o uint32) bool { return fn(x.entries[o]) })
}

// isWordTerm says a term is a search word's ("w:" + word).
func isWordTerm(term string) (string, bool) {
	return strings.CutPrefix(term, "w:")
}
