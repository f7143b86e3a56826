// Package meaning is the offline judge's and agent's reading of English:
// whether a reply says what a condition asks, and which sentences of a
// prompt answer a question, by meaning rather than by shared words. It
// is deterministic, needs no network, and rests on WordNet (package
// wordnet) for synonyms, derived forms, more and less specific words and
// antonyms; numbers and units, negation and conditions of several parts
// are read by the rules in this package.
//
// The rule a condition is judged by (Decide):
//
//  1. The condition's content is its words that carry meaning (not
//     function words, modal words, or the framing of a condition such as
//     "the agent tells the caller that") and the amounts it states.
//  2. A content word is supported when a word of the reply relates to it
//     well enough in WordNet (see relate.go), with the same polarity: a
//     negated match ("you do not need a receipt" for "with a receipt") or
//     an antonym ("expensive" for "cheap") contradicts it.
//  3. An amount is supported by the same amount in any unit ("a month"
//     for "30 days", "half past nine" for "9:30", "$200" for "two hundred
//     dollars"); a different amount of the same kind contradicts it,
//     unless the reply says it of something else (a sentence naming a
//     thing and nothing of the condition's).
//  4. A condition of several parts ("… the date and the time") needs each
//     part, said together in one sentence of the reply: a part with
//     nothing supported fails it. What the condition says of a thing
//     ("the unlimited plan") must be said of that thing in the reply;
//     another amount of its kind, or another word in a modifier's place,
//     in the sentence that says the rest contradicts it.
//  5. Met when nothing contradicts, at least 70% of the weighted content
//     is supported and every part at least half; not met on a
//     contradiction, a missing part, less than half the content, or a
//     reply that declines; unknown, with what was found and missed, in
//     between. A condition with no content at all ("The agent answers
//     correctly", "None.") is unknown: nothing in it can be checked,
//     and calling it met would pass any reply.
//  6. A prohibition ("the agent does not promise a refund") is met unless
//     the reply asserts what it forbids (a price where it forbids a
//     charge, a date where it forbids a date); a condition that asks the
//     agent to decline is met by a reply that declines.
//  7. What the reply says can be weaker than what the condition states:
//     a hedge ("it should be ready later", "it may be cancelled") says
//     only that it may be so, a promise ("it will be paid once …") only
//     that what the condition says is done will be, and a qualifier
//     makes an absolute hold only sometimes ("free if you spend £20;
//     otherwise £3", "at any time during opening hours"); none is met,
//     unless the condition hedges too (see qualify.go).
package meaning

import (
	"crypto/sha256"
	"fmt"
	"math"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/voiceai-platform/voiceai/services/testing/meaning/wordnet"
)

// Model reads meaning with one WordNet. It is safe for concurrent use.
type Model struct {
	db      *wordnet.DB
	cache   reachCache
	orgOnce sync.Once
	orgs    map[wordnet.Synset]bool
	// decided memoises decisions: a test's condition is judged on the
	// same reply once per repeat of an invocation.
	decided *lru.Cache[[sha256.Size]byte, Decision]
	// candidates memoises the analyses of prompts' sentences (read only);
	// similar, the similarities of replies to a test's examples.
	candidates *lru.Cache[string, text]
	similar    *lru.Cache[[sha256.Size]byte, float64]
}

// maxDecided bounds the memo of decisions.
const maxDecided = 16384

// New is a model on db.
func New(db *wordnet.DB) *Model {
	decided, _ := lru.New[[sha256.Size]byte, Decision](maxDecided)
	candidates, _ := lru.New[string, text](maxDecided)
	similar, _ := lru.New[[sha256.Size]byte, float64](maxDecided)
	return &Model{db: db, cache: reachCache{m: map[string]*reach{}}, decided: decided, candidates: candidates, similar: similar}
}

// Default is the model on the shipped WordNet (or the operator's, see
// wordnet.Default), made once.
func Default() (*Model, error) {
	defaultOnce.Do(func() {
		db, err := wordnet.Default()
		if err != nil {
			defaultErr = err
			return
		}
		defaultModel = New(db)
	})
	return defaultModel, defaultErr
}

var (
	defaultOnce  sync.Once
	defaultModel *Model
	defaultErr   error
)

// Version names the lexical resource, for a verdict's provenance.
func (m *Model) Version() string { return m.db.Version }

// Result is a decision's outcome.
type Result string

// The outcomes.
const (
	Met     Result = "met"
	NotMet  Result = "not_met"
	Unknown Result = "unknown"
)

// Decision is whether a reply meets a condition, and why.
type Decision struct {
	Result    Result
	Reason    string   // one sentence
	Found     []string // the condition's words and amounts the reply supports
	Missing   []string // those it does not
	Conflicts []string // what it contradicts, as "X (reply: Y)"
	// Uncheckable: the condition names nothing a reply could say or lack
	// ("The agent answers correctly"), so no reply can be checked
	// against it; Result is Unknown.
	Uncheckable bool
}

// NothingToCheck is the reason of an Uncheckable decision.
const NothingToCheck = "the offline judge cannot check this condition: it names nothing a reply could say or lack"

// The thresholds of the rule (see the package comment).
const (
	metCoverage  = 0.7
	partCoverage = 0.5
	notMetBelow  = 0.5
	amountWeight = 1.5
)

// item is one thing a condition asks: a content word or an amount.
type item struct {
	tok    *token
	amount *quantity
	part   int
	weight float64
	kinds  []string // a word naming a kind of amount ("price", "date") is supported by any amount of that kind
	rate   string   // "monthly": supported by "a month", "per month"
	topic  bool     // the first thing the condition names: a reply may call it "it"
}

// asksSomething reports whether a condition is about asking or offering
// ("asks for the reference", "offers help"): then a reply's question
// ("How can I help?") may meet it.
func asksSomething(words []word) bool {
	for _, w := range words {
		for _, p := range []string{"ask", "question", "clarif", "request", "enquir", "inquir", "check", "offer"} {
			if strings.HasPrefix(w.s, p) {
				return true
			}
		}
	}
	return false
}

// statements is t without what it says in questions.
func statements(t text) text {
	out := t
	out.tokens, out.amounts = nil, nil
	for _, tok := range t.tokens {
		if !tok.asks {
			out.tokens = append(out.tokens, tok)
		}
	}
	for _, q := range t.amounts {
		if !q.asks {
			out.amounts = append(out.amounts, q)
		}
	}
	return out
}

// resolveTopic lets a reply say "it" for the first thing the condition
// names ("it's in stock" of "the item"), where the reply says something
// else of its part in the same sentence, and does not decline. Where the
// reply named the thing in an earlier sentence, "it" is that thing ("the
// tandem is booked on Saturday, but it's free on Sunday").
func (m *Model) resolveTopic(items []item, sups []support, rep text, refuses bool) {
	if !rep.refers || refuses {
		return
	}
	refersIn := map[int]bool{}
	for _, w := range rep.words {
		if pronouns[w.s] {
			refersIn[w.sent] = true
		}
	}
	for i, it := range items {
		if !it.topic || sups[i].conflict != "" {
			continue
		}
		named, first := len(sups[i].sents) > 0, -1
		if named {
			for sent := range sups[i].sents {
				if first < 0 || sent < first {
					first = sent
				}
			}
		}
		// only when it is all that is missing: "it" stands for one thing
		others := map[int]bool{}
		alone := true
		for k, other := range items {
			if k == i || other.part != it.part {
				continue
			}
			if len(sups[k].sents) == 0 {
				alone = false
			}
			for sent := range sups[k].sents {
				others[sent] = true
			}
		}
		if alone {
			for sent := range others {
				if !named || (first >= 0 && sent > first && refersIn[sent] && !sups[i].sents[sent]) {
					sups[i].sents[sent] = true
				}
			}
		}
	}
}

func (it item) name() string {
	if it.amount != nil {
		return it.amount.surface
	}
	return it.tok.surface
}

// support is where in the reply an item is supported (by sentence; -1:
// in every sentence), or what contradicts it.
type support struct {
	sents    map[int]bool
	conflict string
}

func (s support) in(sent int) bool { return s.sents[sent] || s.sents[-1] }

// Decide judges whether reply meets condition. The decision's slices are
// shared with later calls on the same texts: read them, do not change them.
func (m *Model) Decide(condition, reply string) Decision {
	key := sha256.Sum256([]byte(condition + "\x00" + reply))
	return memoised(m.decided, key, func() Decision { return m.decide(condition, reply) })
}

// memoised is f's value for key, from c when c holds it. The model is
// deterministic, so a value once worked out stands.
func memoised[K comparable, V any](c *lru.Cache[K, V], key K, f func() V) V {
	if v, ok := c.Get(key); ok {
		return v
	}
	v := f()
	c.Add(key, v)
	return v
}

func (m *Model) decide(condition, reply string) Decision {
	cond, rep := m.analyse(condition, true), m.analyse(reply, false)
	cw := split(condition)
	prohibition := isProhibition(cw)
	decline := !prohibition && asksToDecline(cw)
	refuses := Refuses(reply)

	if prohibition {
		// What is forbidden is the plain statement: judge that, and
		// turn the result round.
		for i := range cond.tokens {
			cond.tokens[i].negated = !cond.tokens[i].negated
		}
		for i := range cond.amounts {
			cond.amounts[i].negated = !cond.amounts[i].negated
		}
	}
	items := m.items(cond)
	// A question states nothing ("would you like me to book Tuesday?"),
	// unless the condition is about asking.
	if !asksSomething(cw) {
		rep = statements(rep)
	}
	sups := make([]support, len(items))
	for i, it := range items {
		sups[i] = m.supportOf(it, rep, decline, func(q quantity) bool { return m.saidOfOther(q, items, rep) })
	}
	m.resolveTopic(items, sups, rep, refuses)
	misbound := m.bindModifiers(cond, items, sups, rep, decline)
	// "We can't take bookings for groups over 12" declines nothing when
	// it is what the condition asks the reply to say.
	if refuses && !decline && saysNegated(items, rep, m) {
		refuses = false
	}
	// A part's content must be said together: the part is judged on the
	// reply's sentence that supports most of it, so that "the debit card
	// has no fee; the credit card charges 3%" does not give "the credit
	// card has no fee".
	nParts := 0
	for _, it := range items {
		nParts = max(nParts, it.part+1)
	}
	best := make([]int, nParts)
	partW, partGot := make([]float64, nParts), make([]float64, nParts)
	for p := range nParts {
		best[p], partGot[p] = -2, -1
		for _, sent := range sentencesOf(rep) {
			got := 0.0
			for i, it := range items {
				if it.part == p && sups[i].in(sent) {
					got += it.weight
				}
			}
			if got > partGot[p] {
				best[p], partGot[p] = sent, got
			}
		}
		partGot[p] = max(partGot[p], 0)
		for _, it := range items {
			if it.part == p {
				partW[p] += it.weight
			}
		}
	}
	var d Decision
	totalW, supportedW := 0.0, 0.0
	for i, it := range items {
		totalW += it.weight
		switch {
		case sups[i].in(best[it.part]):
			d.Found = append(d.Found, it.name())
			supportedW += it.weight
		case sups[i].conflict != "":
			d.Conflicts = append(d.Conflicts, sups[i].conflict)
		default:
			if c := m.sibling(it, rep, restIn(best, partGot, it.part)); c != "" {
				d.Conflicts = append(d.Conflicts, c)
			} else if c := m.inItsPlace(it, sups[i], cond, rep, best[it.part]); c != "" {
				d.Conflicts = append(d.Conflicts, c)
			} else {
				d.Missing = append(d.Missing, it.name())
			}
		}
	}
	coverage := 1.0
	if totalW > 0 {
		coverage = supportedW / totalW
	}
	// A thing the condition names (a noun, an amount) that the reply
	// does not say keeps it from being met, however much else it says: a
	// refund "with a receipt" is not met by a refund.
	// So does one the reply says only in another sentence than the rest
	// of its part: said apart, it may be said of something else ("Pilates
	// is on Tuesdays, and yoga on Thursdays" for "yoga is on Tuesdays").
	missingThing, missingKind := "", ""
	for i, it := range items {
		if len(it.kinds) > 0 && !sups[i].in(best[it.part]) && sups[i].conflict == "" && missingKind == "" {
			missingKind = it.name()
		}
		if sups[i].in(best[it.part]) || sups[i].conflict != "" {
			continue
		}
		if it.amount != nil || it.tok.pos == wordnet.Noun || len(sups[i].sents) > 0 {
			missingThing = it.name()
			break
		}
	}
	minPart, emptyPart := 1.0, false
	for p := range nParts {
		if partW[p] > 0 {
			minPart = math.Min(minPart, partGot[p]/partW[p])
			emptyPart = emptyPart || partGot[p] == 0
		}
	}
	// A hedge or a qualifier weakens what the sentences that say it say.
	var saying []int
	for _, b := range best {
		if b >= 0 {
			saying = append(saying, b)
		}
	}
	hedged := ""
	if len(hedgedSentences(cw)) == 0 {
		hs := hedgedSentences(rep.words)
		for _, b := range saying {
			if hs[b] {
				hedged = "the reply says only that it may be so"
			}
		}
	}
	if hedged == "" && onlyPromised(cw, rep, saying) {
		hedged = "the condition says it is done, and the reply only that it will be"
	}
	qualifier := qualified(cw, cond, rep, saying)
	found := func() string { return list(d.Found) }
	missing := func() string { return list(d.Missing) }
	switch {
	case totalW == 0 && !decline:
		// Nothing to look for: calling it met would pass any reply
		// ("The agent answers correctly", "None."). Declining is
		// still checked, by the reply's declining.
		d.Result, d.Reason, d.Uncheckable = Unknown, NothingToCheck, true
	case prohibition:
		// The reply does what is forbidden when it says most of it
		// plainly, or names a price where a charge is forbidden.
		if charge := chargeNamed(rep); charge != "" && forbidsCharge(cw) {
			d.Result, d.Reason = NotMet, fmt.Sprintf("the condition forbids a charge, and the reply names one: %s", charge)
		} else if kind, given := kindGiven(items, rep); given != "" {
			d.Result, d.Reason = NotMet, fmt.Sprintf("the condition forbids giving a %s, and the reply gives one: %s", kind, given)
		} else if totalW > 0 && coverage >= metCoverage && minPart >= partCoverage {
			d.Result, d.Reason = NotMet, fmt.Sprintf("the condition forbids it, and the reply says it: %s", found())
		} else {
			d.Result, d.Reason = Met, "the condition forbids something, and the reply does not say it"
			d.Conflicts = nil
		}
	case decline:
		// Declining is met by a reply that declines, or that denies the
		// very thing the condition names ("we only price-match shops, not
		// online marketplaces").
		switch {
		case refuses || (totalW > 0 && deniedShare(items, rep, m) >= partCoverage):
			d.Result, d.Reason = Met, "the condition asks the agent to decline, and the reply declines"
		default:
			d.Result, d.Reason = NotMet, "the condition asks the agent to decline, and the reply does not"
		}
		d.Conflicts = nil
	case len(d.Conflicts) > 0:
		d.Result, d.Reason = NotMet, "the reply contradicts the condition: "+strings.Join(d.Conflicts, "; ")
	case len(misbound) > 0 && coverage < metCoverage:
		d.Result, d.Reason = NotMet, fmt.Sprintf("the reply says %s of something else", strings.Join(misbound, ", "))
	case refuses && coverage < metCoverage:
		d.Result, d.Reason = NotMet, fmt.Sprintf("the reply declines instead of saying it (missing %s)", missing())
	case missingKind != "":
		d.Result, d.Reason = NotMet, fmt.Sprintf("the reply does not give the %s the condition asks for", missingKind)
	case emptyPart && nParts > 1:
		d.Result, d.Reason = NotMet, fmt.Sprintf("the reply leaves out a part of the condition (missing %s)", missing())
	case hedged != "" && coverage >= notMetBelow:
		d.Result, d.Reason = NotMet, hedged
	case qualifier != "" && coverage >= notMetBelow:
		d.Result, d.Reason = NotMet, "the reply makes it hold only sometimes: "+qualifier
	case coverage >= metCoverage && minPart >= partCoverage && missingThing == "":
		d.Result, d.Reason = Met, fmt.Sprintf("the reply says it: %s", found())
	case coverage < notMetBelow:
		d.Result, d.Reason = NotMet, fmt.Sprintf("the reply does not say most of it (found %s; missing %s)", found(), missing())
	default:
		d.Result, d.Reason = Unknown, fmt.Sprintf("cannot decide: the reply says part of it (found %s; missing %s)", found(), missing())
	}
	return d
}

// pronouns stand for a thing named before.
var pronouns = set("it", "they", "them", "its", "their", "she", "he", "her", "his")

// bindModifiers checks that what a condition says of a thing the reply
// says of that thing: "the unlimited plan" is not met by "the 5G plan
// includes unlimited texts", nor "the smart meter installation is free"
// by "the smart meter itself is free, but installation costs 60 pounds".
// For each modifier the condition puts before a noun, a reply word that
// supports the modifier must itself come before a word that supports the
// noun, or, said after the noun in the same clause ("the plan is
// unlimited"), not before another noun. A modifier said only of
// something else loses its support; bindModifiers names those.
func (m *Model) bindModifiers(cond text, items []item, sups []support, rep text, anyPolarity bool) []string {
	index := map[*token]int{}
	for i := range items {
		if items[i].tok != nil && len(items[i].kinds) == 0 && items[i].rate == "" {
			index[items[i].tok] = i
		}
	}
	supporting := func(c token) []int {
		var out []int
		for k, r := range rep.tokens {
			if r.content && (anyPolarity || r.negated == c.negated) && m.relate(c, r).score >= supported {
				out = append(out, k)
			}
		}
		return out
	}
	var misbound []string
	for ci := 0; ci+1 < len(cond.tokens); ci++ {
		mod, head := &cond.tokens[ci], &cond.tokens[ci+1]
		im, okm := index[mod]
		_, okh := index[head]
		if !okm || !okh || mod.clause != head.clause || head.pos != wordnet.Noun || (mod.pos != wordnet.Adj && mod.pos != wordnet.Noun) {
			continue
		}
		rm, rh := supporting(*mod), supporting(*head)
		if len(rm) == 0 || len(rh) == 0 {
			continue
		}
		isHead := map[int]bool{}
		for _, k := range rh {
			isHead[k] = true
		}
		// the sentences where the modifier is said of the noun
		boundIn := map[int]bool{}
		for _, k := range rm {
			bound := false
			switch {
			case isHead[k]: // one collocation says both
				bound = true
			case k+1 < len(rep.tokens) && rep.tokens[k+1].clause == rep.tokens[k].clause && rep.tokens[k+1].content:
				// before a noun, or a compound ("unlimited data plan"): it
				// is said of the words that follow it
				for n := k + 1; n < len(rep.tokens) && rep.tokens[n].clause == rep.tokens[k].clause && rep.tokens[n].content; n++ {
					bound = bound || isHead[n]
				}
			default: // after its noun, in the same clause
				for _, h := range rh {
					bound = bound || (h < k && rep.tokens[h].clause == rep.tokens[k].clause && k-h <= 5)
				}
			}
			if bound {
				boundIn[rep.tokens[k].sent] = true
			}
		}
		for sent := range sups[im].sents {
			if sent >= 0 && !boundIn[sent] {
				delete(sups[im].sents, sent)
			}
		}
		if len(boundIn) == 0 {
			misbound = append(misbound, fmt.Sprintf("%q", mod.surface))
		}
	}
	return misbound
}

// sentencesOf is the sentence numbers of a text.
func sentencesOf(t text) []int {
	n := 0
	for _, tok := range t.tokens {
		n = max(n, tok.sent+1)
	}
	for _, q := range t.amounts {
		n = max(n, q.sent+1)
	}
	out := make([]int, max(n, 1))
	for i := range out {
		out[i] = i
	}
	return out
}

// saysNegated reports whether the reply says a condition's word under
// the condition's own negation (the condition states a "not").
func saysNegated(items []item, rep text, m *Model) bool {
	for _, it := range items {
		if it.tok == nil || !it.tok.negated {
			continue
		}
		for _, r := range rep.tokens {
			if r.content && r.negated && m.relate(*it.tok, r).score >= supported {
				return true
			}
		}
	}
	return false
}

// deniedShare is the weighted share of a condition's words the reply
// says negated.
func deniedShare(items []item, rep text, m *Model) float64 {
	got, total := 0.0, 0.0
	for _, it := range items {
		if it.tok == nil {
			continue
		}
		total += it.weight
		for _, r := range rep.tokens {
			if r.content && r.negated && m.relate(*it.tok, r).score >= supported {
				got += it.weight
				break
			}
		}
	}
	if total == 0 {
		return 0
	}
	return got / total
}

// items is what the condition asks, part by part: a condition's parts
// are cut at "and", commas and semicolons when each side has content.
// Who the agent speaks to is no part of it, unless that is all the
// condition names: "says a referral is not needed" is about the referral
// (which WordNet also knows as a person referred).
func (m *Model) items(cond text) []item {
	if out := m.itemsOf(cond, false); len(out) > 0 {
		return out
	}
	return m.itemsOf(cond, true)
}

func (m *Model) itemsOf(cond text, withAddressee bool) []item {
	var out []item
	part := 0
	partOfClause := map[int]int{}
	topicSeen := false
	for i := range cond.tokens {
		t := &cond.tokens[i]
		if t.surface == "and" || t.surface == "plus" {
			part++
			continue
		}
		if _, ok := partOfClause[t.clause]; !ok {
			if len(partOfClause) > 0 {
				part++
			}
			partOfClause[t.clause] = part
		}
		if !t.content || t.amount || declineWord(t) || !withAddressee && m.addressee(cond.tokens, i) {
			continue
		}
		it := item{tok: t, part: part, weight: posWeight(t)}
		if t.pos == wordnet.Noun && !topicSeen {
			it.topic, topicSeen = true, true
		}
		if i > 0 && cond.tokens[i-1].surface == "how" && t.surface == "long" {
			it.kinds = []string{"duration"} // how long
		}
		for _, l := range t.lemmas {
			if k, ok := amountKinds[l]; ok && t.pos == wordnet.Noun || ok && len(t.lemmas) == 1 {
				it.kinds = k
			}
			if r, ok := rateWords[l]; ok {
				it.rate = r
			}
		}
		out = append(out, it)
	}
	for i := range cond.amounts {
		q := &cond.amounts[i]
		out = append(out, item{amount: q, part: partBefore(cond, out, q.from), weight: amountWeight})
	}
	// A kind word describing an amount the condition states ("the fee is
	// £35", "the new departure time, 16:40") is checked by that amount.
	var kept []item
	for _, it := range out {
		if len(it.kinds) > 0 && statesKind(cond.amounts, it.kinds) {
			continue
		}
		kept = append(kept, it)
	}
	return mergeEmptyParts(kept)
}

// addressee reports whether condition token i is who the agent speaks
// to ("tells the patient to …", "asks the passenger for …"): the caller,
// whom a reply calls "you" or does not name at all.
func (m *Model) addressee(toks []token, i int) bool {
	if !m.isA(toks[i], personAnchors) {
		return false
	}
	for k := i - 1; k >= 0; k-- {
		s := toks[k].surface
		if s == "the" || s == "a" || s == "an" || s == "their" || s == "his" || s == "her" {
			continue
		}
		return framing[s] || s == "remind" || s == "reminds" || s == "instruct" || s == "instructs" || s == "direct" || s == "directs" || s == "warn" || s == "warns" || s == "thank" || s == "thanks" || s == "greet" || s == "greets" || s == "welcome" || s == "welcomes"
	}
	return false
}

// partBefore is the part of the last word item before word index at
// (an amount belongs to the part it is said in).
func partBefore(cond text, items []item, at int) int {
	part := 0
	for _, it := range items {
		if it.tok != nil && it.tok.at < at {
			part = it.part
		}
	}
	// "and" before the amount with no word item after it starts a new part
	for _, t := range cond.tokens {
		if t.at < at && (t.surface == "and" || t.surface == "plus") {
			after := false
			for _, it := range items {
				after = after || (it.tok != nil && it.tok.at > t.at && it.tok.at < at)
			}
			if !after {
				return part + 1
			}
		}
	}
	return part
}

// amountKinds: nouns naming a kind of amount, and the amounts that give
// one ("the date" is given by "Saturday", "the price" by "£20").
var amountKinds = map[string][]string{
	"date": {"weekday", "month"}, "day": {"weekday"}, "time": {"clock"}, "hour": {"clock"},
	"price": {"money:usd", "money:gbp", "money:eur", "money:any"}, "cost": {"money:usd", "money:gbp", "money:eur", "money:any"},
	"fee": {"money:usd", "money:gbp", "money:eur", "money:any"}, "charge": {"money:usd", "money:gbp", "money:eur", "money:any"},
	"amount": {"money:usd", "money:gbp", "money:eur", "money:any", "count"},
	"length": {"duration"}, "duration": {"duration"}, "period": {"duration"}, "term": {"duration"},
	"percentage": {"percent"}, "rate": {"percent", "money:usd", "money:gbp", "money:eur"}, "number": {"count"},
	"allowance": {"count"}, "limit": {"count", "money:usd", "money:gbp", "money:eur"},
}

// rateWords: adjectives of a rate, and the unit a reply names it by ("a
// month", "per month").
var rateWords = map[string]string{
	"daily": "day", "weekly": "week", "monthly": "month", "yearly": "year", "annual": "year", "annually": "year", "nightly": "night", "hourly": "hour",
}

// kindGiven is a kind of amount a condition names ("a delivery date")
// and the amount of that kind the reply states plainly ("by Thursday"),
// or "".
func kindGiven(items []item, rep text) (kind, given string) {
	for _, it := range items {
		for _, q := range rep.amounts {
			if q.negated || q.asks {
				continue
			}
			for _, k := range it.kinds {
				// a count is too common to be what is forbidden ("the
				// card ending 4421" gives no card number)
				if q.dim == k && k != "count" {
					return it.name(), q.surface
				}
			}
		}
	}
	return "", ""
}

func statesKind(amounts []quantity, kinds []string) bool {
	for _, q := range amounts {
		for _, k := range kinds {
			if q.dim == k {
				return true
			}
		}
	}
	return false
}

// declineWord reports whether t is a verb of declining: what a decline
// condition asks is checked by the reply's declining, not by the word.
func declineWord(t *token) bool {
	for _, l := range t.lemmas {
		if l == "decline" || l == "refuse" {
			return true
		}
	}
	return false
}

// mergeEmptyParts renumbers parts so that only parts with content count
// ("the agent greets and asks": the framing-only piece is no part).
func mergeEmptyParts(items []item) []item {
	seen := map[int]int{}
	for i := range items {
		p, ok := seen[items[i].part]
		if !ok {
			p = len(seen)
			seen[items[i].part] = p
		}
		items[i].part = p
	}
	return items
}

func posWeight(t *token) float64 {
	switch t.pos {
	case wordnet.Verb:
		return 0.75
	case wordnet.Adv:
		return 0.5
	}
	return 1
}

// supportOf is where the reply supports item it, or what contradicts it.
// With anyPolarity, negation does not matter (a condition that asks the
// agent to decline). An amount of the reply said of something else
// (aside) contradicts none of the condition's.
func (m *Model) supportOf(it item, rep text, anyPolarity bool, aside func(quantity) bool) support {
	s := support{sents: map[int]bool{}}
	if it.amount != nil {
		q := *it.amount
		var other []string
		for _, r := range rep.amounts {
			switch {
			case q.same(r) && (r.negated == q.negated || anyPolarity):
				s.sents[r.sent] = true
			case q.same(r) && !aside(r):
				other = append(other, "not "+fmt.Sprintf("%q", r.surface))
			case q.comparable(r) && !r.negated && !aside(r):
				other = append(other, fmt.Sprintf("%q", r.surface))
			}
		}
		if len(s.sents) == 0 && len(other) > 0 {
			s.conflict = fmt.Sprintf("%q (reply: %s)", q.surface, strings.Join(other, ", "))
		}
		return s
	}
	c := *it.tok
	if c.surface == "question" || c.surface == "questions" {
		for _, r := range rep.tokens {
			if r.asks {
				s.sents[r.sent] = true // "asks a question" is met by a question
			}
		}
	}
	switch {
	case rep.speaksAsUs && m.isOrganisation(c):
		s.sents[-1] = true // "we open at 9" for "the store opens at 9"
	}
	for _, r := range rep.amounts {
		for _, k := range it.kinds {
			if r.dim == k {
				s.sents[r.sent] = true
			}
		}
	}
	if it.rate != "" {
		for i, w := range rep.words {
			if (w.s == "a" || w.s == "per" || w.s == "each" || w.s == "every" || w.s == "an") && i+1 < len(rep.words) && strings.TrimSuffix(rep.words[i+1].s, "s") == it.rate {
				s.sents[w.sent] = true
			}
		}
	}
	// The strongest evidence wins: a reply that says "exchange" and
	// "refunds are not possible" denies the refund.
	bestFor, bestAgainst := 0.0, 0.0
	for _, r := range rep.tokens {
		if !r.content {
			continue
		}
		rel := m.relate(c, r)
		switch {
		case rel.score >= supported && (anyPolarity || r.negated == c.negated):
			s.sents[r.sent] = true
			bestFor = max(bestFor, rel.score)
		case rel.score >= supported:
			if rel.score > bestAgainst {
				s.conflict, bestAgainst = fmt.Sprintf("%q (reply: %s)", c.surface, negatedForm(r)), rel.score
			}
		case rel.antonym && r.negated == c.negated && !anyPolarity:
			if bestAgainst < supported {
				s.conflict, bestAgainst = fmt.Sprintf("%q (reply: %q, its opposite)", c.surface, r.surface), supported
			}
		case rel.antonym && !anyPolarity:
			s.sents[r.sent] = true // "not expensive" for "cheap"
			bestFor = max(bestFor, supported)
		}
	}
	if bestAgainst > bestFor {
		s.sents = map[int]bool{}
	} else if len(s.sents) > 0 {
		s.conflict = ""
	}
	return s
}

// saidOfOther reports whether a reply's amount is said of something the
// condition does not name: its sentence names a thing (a noun) and
// nothing related to the condition's words. "Refunds are possible within
// 30 days" says nothing of how long delivery takes, so its 30 days do
// not contradict "delivery takes three days"; "It takes 5 days" and "You
// have 60 days" name nothing else, and do.
func (m *Model) saidOfOther(q quantity, items []item, rep text) bool {
	other := false
	for _, r := range rep.tokens {
		if r.sent != q.sent || !r.content {
			continue
		}
		for _, it := range items {
			if it.tok != nil && m.relate(*it.tok, r).score >= supported {
				return false
			}
		}
		other = other || r.pos == wordnet.Noun
	}
	return other
}

// restIn is the sentence that says the most of part p, or -2 when none
// says any of it: then no sentence is where the reply says the rest.
func restIn(best []int, got []float64, p int) int {
	if got[p] == 0 {
		return -2
	}
	return best[p]
}

// sibling is the contradiction of a reply that, where the condition
// names one thing, names another of the same kind in the sentence that
// says the rest ("the debit card" for "the credit card", "Pilates" for
// "yoga", "fire damage" for "flood damage"): WordNet's co-hyponyms.
func (m *Model) sibling(it item, rep text, sent int) string {
	if it.amount != nil {
		// another amount of its kind where the rest is said ("the 6pm
		// showing has seats; the 8pm one is sold out" for the 8pm one)
		for _, r := range rep.amounts {
			if r.sent == sent && it.amount.comparable(r) && !it.amount.same(r) && !r.negated {
				return fmt.Sprintf("%q (reply: %q, where it says the rest)", it.amount.surface, r.surface)
			}
		}
		return ""
	}
	if it.tok == nil || !it.tok.known {
		return ""
	}
	c := *it.tok
	parents := map[wordnet.Synset]bool{}
	for _, l := range c.lemmas {
		m.senses(l, c.hint, func(s wordnet.Synset, w float64) {
			if w >= 1 && m.db.POS(s) == wordnet.Noun {
				m.db.Related(s, wordnet.Hypernym, func(h wordnet.Synset) { parents[h] = true })
			}
		})
	}
	if len(parents) == 0 {
		return ""
	}
	for _, r := range rep.tokens {
		if !r.content || !r.known || r.sent != sent || m.relate(c, r).score >= supported {
			continue
		}
		var found bool
		for _, l := range r.lemmas {
			m.senses(l, r.hint, func(s wordnet.Synset, w float64) {
				if w >= 1 && m.db.POS(s) == wordnet.Noun {
					m.db.Related(s, wordnet.Hypernym, func(h wordnet.Synset) { found = found || parents[h] })
				}
			})
		}
		if found {
			return fmt.Sprintf("%q (reply: %q, another of its kind)", c.surface, r.surface)
		}
	}
	return ""
}

// inItsPlace is the contradiction of a reply that says a condition's
// modifier only apart from the rest, and in the sentence that says the
// rest puts another word before the same thing: "Pilates classes are on
// Tuesdays, and yoga is on Thursdays" for "yoga classes are on
// Tuesdays", "the day crossing" for "the overnight crossing".
func (m *Model) inItsPlace(it item, sup support, cond, rep text, sent int) string {
	if it.tok == nil {
		return ""
	}
	apart := len(sup.sents) > 0
	for _, r := range rep.tokens {
		apart = apart || (r.content && r.sent != sent && m.relate(*it.tok, r).score >= supported)
	}
	if !apart {
		return ""
	}
	ci := -1
	for k := range cond.tokens {
		if &cond.tokens[k] == it.tok {
			ci = k
		}
	}
	if ci < 0 || ci+1 >= len(cond.tokens) {
		return ""
	}
	head := cond.tokens[ci+1]
	if head.clause != it.tok.clause || !head.content || head.pos != wordnet.Noun {
		return ""
	}
	for k := 1; k < len(rep.tokens); k++ {
		r, before := rep.tokens[k], rep.tokens[k-1]
		if r.sent != sent || !r.content || m.relate(head, r).score < supported {
			continue
		}
		if before.content && before.clause == r.clause && before.at == r.at-1 && m.relate(*it.tok, before).score < supported && m.relate(head, before).score < supported {
			return fmt.Sprintf("%q (reply: %q, in its place)", it.tok.surface, before.surface)
		}
	}
	return ""
}

func negatedForm(r token) string {
	if r.negated {
		return fmt.Sprintf("not %q", r.surface)
	}
	return fmt.Sprintf("%q", r.surface)
}

// isProhibition reports whether a condition forbids something: it is
// negated before any content word ("the agent does not promise …",
// "never asks for the PIN", "avoids giving medical advice").
func isProhibition(words []word) bool {
	for i, w := range words {
		switch {
		case w.s == "not" || w.s == "never" || w.s == "avoids" || w.s == "avoid" || w.s == "refrains":
			return i+1 < len(words) && !framingOnly(words[i+1:])
		case w.s == "no" || w.s == "without":
			return false
		case !function[w.s] && !framing[w.s]:
			return false
		}
	}
	return false
}

// framingOnly: what follows the negation is no more than framing ("does
// not say" is followed by what is not said, so it is a prohibition; a
// condition that ends at "not" is not).
func framingOnly(rest []word) bool {
	for _, w := range rest {
		if !function[w.s] && !framing[w.s] {
			return false
		}
	}
	return true
}

// asksToDecline reports whether a condition asks the agent to decline or
// admit it cannot help.
func asksToDecline(words []word) bool {
	for i, w := range words {
		for _, p := range []string{"declin", "refus", "unable"} {
			if strings.HasPrefix(w.s, p) {
				return true
			}
		}
		if (w.s == "not" || w.s == "cannot") && i+1 < len(words) {
			switch words[i+1].s {
			case "know", "help", "answer", "assist", "able", "have", "find":
				return true
			}
		}
	}
	return false
}

// Refuses reports whether a reply declines or admits it cannot answer:
// "I don't know", "I can't help with that", "I'm unable to", "I could
// not find that in my instructions", "we can't switch that off", "I'm
// not able to share that" — the speaker (I, we) saying what they cannot
// or will not do.
func Refuses(reply string) bool {
	words := split(reply)
	for i, w := range words {
		if w.s == "unable" {
			return true
		}
		if w.s != "not" || i < 2 {
			continue
		}
		// I/we + a modal or auxiliary (+ "really") + not
		j := i - 1
		if !auxiliaries[words[j].s] {
			continue
		}
		if j >= 1 && (words[j-1].s == "i" || words[j-1].s == "we") {
			return true
		}
	}
	return false
}

var auxiliaries = set("can", "could", "will", "would", "do", "did", "am", "are", "may", "shall", "should", "have")

func list(words []string) string {
	if len(words) == 0 {
		return "nothing"
	}
	return strings.Join(words, ", ")
}
