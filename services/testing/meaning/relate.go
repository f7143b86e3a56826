package meaning

import (
	"strings"
	"sync"

	"github.com/voiceai-platform/voiceai/services/testing/meaning/wordnet"
)

// How far a word of a condition reaches in WordNet, and what each step
// is worth. A reply supports a condition's word when it says the same
// word, a synonym (a shared synset), a derived form (refund n ↔ refund
// v), something more specific (a "jacket" is "clothing": hyponyms, two
// levels down) or, weaker, something one level more general. Antonyms
// are kept apart: they contradict.
const (
	wSynonym    = 1.0
	wDerived    = 0.9  // derivation, pertainym, attribute
	wSimilar    = 0.85 // similar-to, also-see, verb group
	wHyponym1   = 0.9
	wHyponym2   = 0.8
	wHypernym   = 0.6 // alone, never enough: a reply more general than the condition does not say it
	wEntailment = 0.7
	// supported is the score from which a reply's word supports a
	// condition's.
	supported = 0.7
)

// senseWeight discounts a word's rarer senses: a word is read in its
// common senses first ("return" the jacket is rarely to "refund" it).
func senseWeight(rank int) float64 {
	switch {
	case rank < 2:
		return 1
	case rank < 4:
		return 0.85
	}
	return 0.7
}

// reach is what a condition's word reaches: a score per synset, and the
// synsets of its antonyms.
type reach struct {
	score    map[wordnet.Synset]float64
	antonyms map[wordnet.Synset]bool
}

type reachCache struct {
	mu sync.Mutex
	m  map[string]*reach
}

// maxReachCache bounds the cache of condition words' reaches (a test
// suite's conditions use a few thousand words).
const maxReachCache = 20000

func (m *Model) reachOf(lemma string, h hint) *reach {
	key := lemma + "/" + string(rune('0'+h))
	m.cache.mu.Lock()
	r, ok := m.cache.m[key]
	m.cache.mu.Unlock()
	if ok {
		return r
	}
	r = m.expand(lemma, h)
	m.cache.mu.Lock()
	if len(m.cache.m) >= maxReachCache {
		m.cache.m = map[string]*reach{}
	}
	m.cache.m[key] = r
	m.cache.mu.Unlock()
	return r
}

// senses is a lemma's senses with their weights: those of the part of
// speech its neighbours say (when it has that part of speech), rarer
// senses weighed down.
func (m *Model) senses(lemma string, h hint, f func(s wordnet.Synset, w float64)) {
	all := m.db.Senses(lemma)
	var has [4]bool
	for _, s := range all {
		has[m.db.POS(s)] = true
	}
	// Only the part of speech the neighbours say, when the word has it;
	// after a determiner an adjective may come too ("a cheap table").
	only := wordnet.POS(255)
	switch {
	case h == nounHint && has[wordnet.Noun] && !has[wordnet.Adj]:
		only = wordnet.Noun
	case h == verbHint && has[wordnet.Verb]:
		only = wordnet.Verb
	}
	var rank [4]int
	for _, s := range all {
		p := m.db.POS(s)
		r := rank[p]
		rank[p]++
		if only != 255 && p != only {
			continue
		}
		f(s, senseWeight(r))
	}
}

func (m *Model) expand(lemma string, h hint) *reach {
	db := m.db
	r := &reach{score: map[wordnet.Synset]float64{}, antonyms: map[wordnet.Synset]bool{}}
	var w0 float64
	put := func(s wordnet.Synset, w float64) {
		if w*w0 > r.score[s] {
			r.score[s] = w * w0
		}
	}
	m.senses(lemma, h, func(s wordnet.Synset, sw float64) {
		w0 = sw
		put(s, wSynonym)
		db.Links(s, func(rel wordnet.Rel, t wordnet.Synset) {
			switch rel {
			case wordnet.Derivation, wordnet.Pertainym, wordnet.Attribute:
				put(t, wDerived)
				// and what is more specific than the derived form (greet →
				// greeting → hello)
				db.Related(t, wordnet.Hyponym, func(u wordnet.Synset) { put(u, wDerived*wHyponym1) })
			case wordnet.Similar, wordnet.AlsoSee, wordnet.VerbGroup:
				put(t, wSimilar)
			case wordnet.Hyponym:
				put(t, wHyponym1)
				db.Related(t, wordnet.Hyponym, func(u wordnet.Synset) { put(u, wHyponym2) })
			case wordnet.Hypernym:
				put(t, wHypernym)
			case wordnet.Entailment, wordnet.Cause:
				put(t, wEntailment)
			case wordnet.Antonym:
				// Only adjectives and adverbs oppose: "open" and "close"
				// as verbs can both be true of one day (open 9 to 5).
				if p := db.POS(t); (p == wordnet.Adj || p == wordnet.Adv) && sw >= 0.85 {
					r.antonyms[t] = true
					// its similar adjectives too (cheap ↔ expensive ~ costly)
					db.Related(t, wordnet.Similar, func(u wordnet.Synset) { r.antonyms[u] = true })
				}
			}
		})
	})
	return r
}

// relation is how a reply's token relates to a condition's.
type relation struct {
	score   float64
	antonym bool
}

// relate scores reply token b against condition token a.
func (m *Model) relate(a, b token) relation {
	for _, x := range a.lemmas {
		for _, y := range b.lemmas {
			if x == y {
				return relation{score: 1}
			}
			// English compounds are head-last: a "helpline" is a "line",
			// a "chargeback" a "charge" (for words WordNet lacks).
			if !b.known && len(x) >= 4 && len(y) > len(x) && strings.HasSuffix(y, x) {
				return relation{score: wHyponym1}
			}
		}
	}
	if !a.known || !b.known {
		return relation{}
	}
	best := relation{}
	for _, x := range a.lemmas {
		r := m.reachOf(x, a.hint)
		for _, y := range b.lemmas {
			m.senses(y, b.hint, func(s wordnet.Synset, w float64) {
				if r.antonyms[s] && w >= 0.9 {
					best.antonym = true
				}
				if sc := r.score[s] * w; sc > best.score {
					best.score = sc
				}
			})
		}
	}
	if best.score >= supported {
		best.antonym = false
	}
	return best
}

// organisationAnchors are the WordNet concepts a business is: a reply in
// the first person plural ("we open at 9") speaks for any of them.
var organisationAnchors = []string{"organization", "establishment", "institution", "company", "facility", "business"}

// personAnchors: a condition's word for the caller ("the patient", "the
// passenger") is who a reply says "you" to.
var personAnchors = []string{"person"}

// isA reports whether condition word c is, in one of its two commonest
// noun senses, a kind of one of the anchors (up to eight levels up).
func (m *Model) isA(c token, anchors []string) bool {
	if !c.known || c.pos != wordnet.Noun {
		return false
	}
	set := map[wordnet.Synset]bool{}
	for _, a := range anchors {
		if ss := m.db.Senses(a); len(ss) > 0 && m.db.POS(ss[0]) == wordnet.Noun {
			set[ss[0]] = true
		}
	}
	for _, l := range c.lemmas {
		for rank, s := range m.db.Senses(l) {
			if rank >= 2 || m.db.POS(s) != wordnet.Noun {
				break
			}
			if m.hasAncestor(s, set, 8) {
				return true
			}
		}
	}
	return false
}

// isOrganisation reports whether condition word c names something an
// agent speaks for as "we": a store, a clinic, a bank, a team (a
// hyponym, up to six levels, of an organisation or establishment).
func (m *Model) isOrganisation(c token) bool {
	if !c.known || c.pos != wordnet.Noun {
		return false
	}
	m.orgOnce.Do(func() {
		m.orgs = map[wordnet.Synset]bool{}
		for _, a := range organisationAnchors {
			for _, s := range m.db.Senses(a) {
				if m.db.POS(s) == wordnet.Noun {
					m.orgs[s] = true
				}
			}
		}
	})
	for _, l := range c.lemmas {
		for rank, s := range m.db.Senses(l) {
			if rank >= 2 {
				break
			}
			if m.hasAncestor(s, m.orgs, 6) {
				return true
			}
		}
	}
	return false
}

func (m *Model) hasAncestor(s wordnet.Synset, anchors map[wordnet.Synset]bool, depth int) bool {
	if anchors[s] {
		return true
	}
	if depth == 0 {
		return false
	}
	found := false
	m.db.Related(s, wordnet.Hypernym, func(h wordnet.Synset) { found = found || m.hasAncestor(h, anchors, depth-1) })
	return found
}
