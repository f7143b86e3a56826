package meaning

import (
	"strings"
	"unicode"

	"github.com/voiceai-platform/voiceai/services/testing/meaning/wordnet"
)

// token is one word (or WordNet collocation: "bring back", "credit
// card") of a text, with what the rules need to know of it.
type token struct {
	surface string   // as written, lower case
	lemmas  []string // its WordNet base forms, any part of speech; the surface word when it has none
	pos     wordnet.POS
	hint    hint // the part of speech its neighbours say it has
	known   bool // a WordNet word
	amount  bool // also an amount (a weekday, a month), checked as one in a condition
	content bool // carries meaning: not a function, light, modal or framing word
	negated bool // said under a negation ("no refunds", "you do not need a receipt")
	clause  int
	sent    int  // the sentence it is in (sentences end at . ! ? ; and line ends, and at a contrast: "but", "whereas")
	at      int  // its first word's index
	asks    bool // said in a question ("would you like me to book it?"): asked, not stated
}

// text is an analysed text: its tokens, clause by clause, and the
// quantities it states.
type text struct {
	words   []word
	tokens  []token
	amounts []quantity
	clauses int
	// speaksAsUs: the text says "we", "us" or "our" (an agent speaking
	// for its business).
	speaksAsUs bool
	// refers: it says "it", "they", "this" (of what was asked about).
	refers  bool
	refuses bool // set by Similarity only
}

// word is a raw token before lemmatisation.
type word struct {
	s      string
	clause int
	sent   int
	sep    bool // a clause boundary follows
	end    bool // a sentence ends after it
	stop   bool // a full stop, question or exclamation mark, semicolon or line end follows
	asks   bool // its utterance (up to the stop before it) is a question
}

// split cuts s into lower-case words and clause boundaries: sentence
// ends, semicolons, colons, commas, dashes and the contrastive
// conjunctions ("but", "however", "although", "whereas"), since a
// negation or a contrast does not reach past them.
func split(s string) []word {
	s = quotesAndDashes.Replace(strings.ToLower(s))
	s = expandContractions(s)
	s = meridiems.Replace(s)
	var out []word
	clause := 0
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, word{s: b.String(), clause: clause})
			b.Reset()
		}
	}
	boundary := func() {
		flush()
		if n := len(out); n > 0 && !out[n-1].sep {
			out[n-1].sep = true
			clause++
		}
	}
	sentenceEnd := func() {
		boundary()
		if n := len(out); n > 0 {
			out[n-1].end = true
		}
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		case (r == '.' || r == ',' || r == ':' || r == '/') && b.Len() > 0 && i+1 < len(rs) && unicode.IsDigit(rs[i+1]) && unicode.IsDigit(rs[i-1]):
			b.WriteRune(r) // 1,000 · 2.50 · 9:30 · 24/7
		case r == '$' || r == '£' || r == '€' || r == '%':
			flush()
			out = append(out, word{s: string(r), clause: clause})
		case r == '\'' && b.Len() > 0 && i+1 < len(rs) && unicode.IsLetter(rs[i+1]):
			// o'clock; a possessive 's is dropped below
			if i+1 < len(rs) && rs[i+1] == 's' && (i+2 >= len(rs) || !unicode.IsLetter(rs[i+2])) {
				i++
				continue
			}
			b.WriteRune(r)
		case r == '?':
			sentenceEnd()
			// the clause with the question mark asks ("Hello Ann, how can
			// I help?" greets, then asks)
			for k := len(out) - 1; k >= 0 && !(out[k].sep && k < len(out)-1); k-- {
				out[k].asks = true
			}
			if n := len(out); n > 0 {
				out[n-1].stop = true
			}
		case r == '.' || r == '!' || r == ';' || r == '\n':
			sentenceEnd()
			if n := len(out); n > 0 {
				out[n-1].stop = true
			}
		case r == ':' || r == ',' || r == '(' || r == ')':
			boundary()
		case r == '-' && b.Len() == 0:
			sentenceEnd() // a dash between words, not inside one, sets off a statement of its own
		case r == '-':
			if i+1 < len(rs) && unicode.IsLetter(rs[i+1]) {
				b.WriteRune(' ') // check-in → check in, a WordNet collocation
				continue
			}
			flush()
		default:
			flush()
		}
	}
	flush()
	// Re-split multi-word pieces made from hyphens.
	var words []word
	for _, w := range out {
		parts := strings.Fields(w.s)
		for i, p := range parts {
			last := i == len(parts)-1
			words = append(words, word{s: p, clause: w.clause, sep: w.sep && last, end: w.end && last, asks: w.asks})
		}
	}
	for i := range words {
		if contrastive[words[i].s] && i > 0 {
			words[i-1].sep = true
			words[i-1].end = true // a contrast states something else: its words are not said together
		}
	}
	clause, sent := 0, 0
	for i := range words {
		words[i].clause, words[i].sent = clause, sent
		if words[i].sep {
			clause++
		}
		if words[i].end {
			sent++
		}
	}
	return words
}

var contrastive = set("but", "however", "although", "though", "whereas", "except", "unless", "otherwise", "instead")

// expandContractions writes negations and auxiliaries out: can't →
// can not, won't → will not, isn't → is not, we'll → we will.
func expandContractions(s string) string { return contractions.Replace(s) }

// The replacers split uses, built once (a replacer is costly to build).
var (
	quotesAndDashes = strings.NewReplacer("’", "'", "‘", "'", "–", " - ", "—", " - ")
	meridiems       = strings.NewReplacer("a.m.", "am", "p.m.", "pm", "a.m", "am", "p.m", "pm")
	contractions    = strings.NewReplacer(
		"can't", "can not", "cannot", "can not", "won't", "will not", "shan't", "shall not",
		"n't", " not", "'ll", " will", "'re", " are", "'ve", " have", "'m", " am", "'d", " would",
	)
)

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// function words carry no meaning of their own: determiners, pronouns,
// prepositions, conjunctions, auxiliaries and modals, and the light
// verbs and modality adjectives that say how, not what ("you can get a
// refund" and "a refund is possible" state the same thing).
var function = set(
	"a", "an", "the", "this", "that", "these", "those", "some", "any", "each", "every", "all", "both", "either", "such", "other", "another", "same",
	"i", "me", "my", "mine", "we", "us", "our", "ours", "you", "your", "yours", "he", "him", "his", "she", "her", "hers", "it", "its", "they", "them", "their", "theirs", "one", "ones", "myself", "yourself", "ourselves", "themselves", "itself",
	"who", "whom", "whose", "which", "what", "when", "where", "why", "how", "whether", "if", "then", "than", "so", "as", "because", "since", "while", "until", "till", "once", "also", "too", "just", "only", "even", "still", "yet", "already", "very", "really", "quite", "rather", "much", "many", "more", "most", "less", "least", "few", "lot", "lots",
	"of", "to", "in", "on", "at", "by", "for", "with", "from", "into", "onto", "about", "over", "under", "within", "after", "before", "during", "through", "between", "among", "against", "per", "via", "up", "down", "out", "off", "around", "across", "along", "upon", "there", "here", "back",
	"and", "or", "but", "nor", "however", "although", "though", "whereas", "plus",
	"be", "am", "is", "are", "was", "were", "been", "being", "have", "has", "had", "having", "do", "does", "did", "doing", "done",
	"can", "could", "may", "might", "must", "shall", "should", "will", "would", "ought",
	"let", "lets", "want", "wants", "like", "need", "needs", "needed", "require", "requires", "required", "necessary",
	"possible", "possibly", "able", "allowed", "permitted", "eligible", "available", "sure", "certainly", "definitely", "absolutely", "happy", "glad", "okay", "ok", "yes", "yeah", "well", "now", "right", "great", "course",
)

// lightVerbs say little alone: no part of what a condition asks, but in
// a reply they may say it ("come 15 minutes early" for "arrive").
var lightVerbs = set("get", "gets", "got", "getting", "make", "makes", "made", "go", "goes", "going", "went", "come", "comes", "came", "take", "takes", "took", "put", "keep", "keeps")

// framing words are how test authors frame a condition ("The agent
// tells the caller that …"), not what the reply must say.
var framing = set(
	"agent", "assistant", "bot", "ai", "caller", "customer", "user", "client", "person", "reply", "response", "answer", "respond", "responds",
	"say", "says", "said", "tell", "tells", "told", "explain", "explains", "mention", "mentions", "state", "states", "inform", "informs",
	"confirm", "confirms", "note", "notes", "advise", "advises", "clarify", "clarifies", "describe", "describes", "provide", "provides", "give", "gives",
	"offer", "offers", "ask", "asks", "request", "requests", "ensure", "ensures", "quote", "quotes", "quoted", "acknowledge", "acknowledges", "share", "shares", "communicate", "communicates", "indicate", "indicates",
	"policy", "policies", "procedure", "procedures", "process", "rule", "rules",
	"correctly", "clearly", "accurately", "politely", "information", "detail", "details", "correct", "accurate", "appropriate", "appropriately", "relevant",
)

// Negations. A clause negator ("not", "never") negates its whole clause
// ("refunds are not possible", "you do not need a receipt"); a noun
// negator ("no", "without") negates what follows it in the clause ("no
// refunds", "without a receipt"). "Can not … without Y" is a
// requirement of Y, not a negation of the rest.
var (
	clauseNegators = set("not", "never", "neither", "nor", "unable", "nowhere")
	nounNegators   = set("no", "without", "none", "nothing", "nobody", "noone", "except", "excluding")
)

// analyseQuestion reads a caller's question: its light verbs and verbs
// of asking ("can I get a refund", "can you give me advice", "tell me")
// ask nothing.
func (m *Model) analyseQuestion(s string) text {
	t := m.analyse(s, false)
	for i, tok := range t.tokens {
		for _, l := range append([]string{tok.surface}, tok.lemmas...) {
			if lightVerbs[l] || (framing[l] && m.hasVerb(l)) {
				t.tokens[i].content = false
			}
		}
	}
	return t
}

// analyse reads s: its words, lemmas, negations and quantities. With
// condition set, framing words are not content.
func (m *Model) analyse(s string, condition bool) text {
	words := split(s)
	var t text
	t.words = words
	t.amounts = quantities(words)
	for _, w := range words {
		t.speaksAsUs = t.speaksAsUs || w.s == "we" || w.s == "us" || w.s == "our" || w.s == "ours"
		t.refers = t.refers || w.s == "it" || w.s == "they" || w.s == "them" || w.s == "this" || w.s == "that" || w.s == "its"
	}
	amountWord := make([]bool, len(words))
	for _, q := range t.amounts {
		if q.dim == "weekday" || q.dim == "month" {
			continue // also a word: "friday" is a "weekday"
		}
		for i := q.from; i < q.to; i++ {
			amountWord[i] = true
		}
	}
	// "no early termination fee": the fee is nothing, and early
	// termination is not denied.
	zeroFee := map[int]bool{}
	for i, w := range words {
		if (w.s != "no" && w.s != "without") || w.sep || amountWord[i] {
			continue
		}
		for k := i + 2; k < len(words) && k <= i+3 && words[k].clause == w.clause && !function[words[k-1].s]; k++ {
			if feeNouns[words[k].s] {
				t.amounts = append(t.amounts, quantity{dim: "money:any", values: []float64{0}, from: i, to: k + 1, surface: joinWords(words[i : k+1])})
				amountWord[i], amountWord[k], zeroFee[i] = true, true, true
				break
			}
		}
	}
	if n := len(words); n > 0 {
		t.clauses = words[n-1].clause + 1
	}
	// Polarity: clause negation, then noun negation within the clause.
	clauseNeg := make(map[int]bool)
	requirement := make(map[int]bool) // a "without" that a negation turns into a requirement
	for i, w := range words {
		if clauseNegators[w.s] {
			clauseNeg[w.clause] = true
			for k := i + 1; k < len(words) && words[k].clause == w.clause; k++ {
				if words[k].s == "without" {
					// can not X without Y: Y is required, X is not denied
					clauseNeg[w.clause] = false
					requirement[k] = true
				}
			}
		}
	}
	negated := make([]bool, len(words))
	for i, w := range words {
		negated[i] = clauseNeg[w.clause]
	}
	for i, w := range words {
		if !nounNegators[w.s] || (w.s == "no" && w.sep) || requirement[i] || zeroFee[i] { // "No, you can …" answers, it does not negate
			continue
		}
		// up to the next "and", "or", or a preposition after the negated
		// noun ("no refunds after 30 days", "no charge for delivery")
		took := false
		for j := i + 1; j < len(words) && words[j].clause == w.clause; j++ {
			if words[j].s == "and" || words[j].s == "or" || words[j].s == "with" || (took && prepositions[words[j].s]) {
				break
			}
			negated[j] = !negated[j]
			took = took || !function[words[j].s]
		}
	}
	for k := range t.amounts {
		q := &t.amounts[k]
		// "no charge" is itself the amount 0; "no longer free" is not
		q.sent, q.negated, q.asks = words[q.from].sent, negated[q.from] && !nounNegators[words[q.from].s], words[q.from].asks
	}
	if !condition {
		for _, q := range m.unpaid(words, negated) {
			// "you won't pay a penny for the check-up": the negation is
			// the amount 0, and does not deny the check-up.
			for k := q.from; k < q.to; k++ {
				amountWord[k] = true
			}
			if clauseNeg[words[q.from].clause] {
				for k := range words {
					if words[k].clause == words[q.from].clause {
						negated[k] = false
					}
				}
			}
			t.amounts = append(t.amounts, q)
		}
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		if amountWord[i] || clauseNegators[w.s] || nounNegators[w.s] {
			continue
		}
		// The longest WordNet collocation starting here ("credit card",
		// "bring back"), also with one word between a verb and its
		// particle ("bring it back").
		if n, lemma := m.collocation(words, i); n > 0 {
			tok := m.token(lemma, w.clause, condition)
			tok.sent, tok.at, tok.asks = w.sent, i, w.asks
			tok.surface = joinWords(words[i : i+n])
			tok.negated = negated[i]
			t.tokens = append(t.tokens, tok)
			i += n - 1
			continue
		}
		if p, lemma := m.particleVerb(words, i); p > 0 {
			tok := m.token(lemma, w.clause, condition)
			tok.sent, tok.at, tok.asks = w.sent, i, w.asks
			tok.negated = negated[i]
			t.tokens = append(t.tokens, tok)
			t.tokens = append(t.tokens, token{surface: words[i+1].s, clause: w.clause, sent: w.sent})
			i += p
			continue
		}
		tok := m.token(w.s, w.clause, condition)
		tok.sent, tok.at, tok.asks = w.sent, i, w.asks
		tok.negated = negated[i]
		tok.hint = hintAt(words, i)
		if tok.hint == nounHint && m.verbAfterSubject(words, i, tok.lemmas) {
			tok.hint = verbHint // "the store closes", not "the credit cards"
		}
		if tok.hint == nounHint && tok.known && m.hasPOS(tok.lemmas, wordnet.Noun) {
			tok.pos = wordnet.Noun // "the plan", not "to plan"
		}
		tok.amount = isCalendarWord(w.s)
		t.tokens = append(t.tokens, tok)
	}
	return t
}

// hint is a part of speech read from a word's neighbours, or none.
type hint int8

const (
	noHint hint = iota
	nounHint
	verbHint
)

// nounBefore are words after which a noun (or its adjective) comes: "a
// table", "your booking", "two guests"; verbBefore, a verb: "to book",
// "we deliver", "can cancel".
var (
	nounBefore = set("a", "an", "the", "my", "your", "our", "their", "his", "her", "its", "this", "that", "these", "those", "each", "every", "any", "some", "no", "of")
	verbBefore = set("to", "we", "i", "you", "they", "can", "could", "will", "would", "may", "might", "must", "should", "shall", "not", "please", "also", "never", "always")
)

// hintAt reads the part of speech of words[i] from the words before it:
// a determiner, or a determiner and one more word ("the unlimited
// plan"), before a noun; "to", a subject pronoun or a modal before a verb.
func hintAt(words []word, i int) hint {
	if i == 0 || words[i-1].clause != words[i].clause {
		return noHint
	}
	prev := words[i-1].s
	switch {
	case nounBefore[prev] || isNumberWord(prev):
		return nounHint
	case verbBefore[prev]:
		return verbHint
	case i >= 2 && words[i-2].clause == words[i].clause && nounBefore[words[i-2].s] && !function[prev]:
		return nounHint
	}
	return noHint
}

func joinWords(ws []word) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.s
	}
	return strings.Join(parts, " ")
}

// collocation is the number of words of the longest multi-word WordNet
// lemma starting at words[i] (its last word may be inflected), and the
// lemma; 0 when there is none.
func (m *Model) collocation(words []word, i int) (int, string) {
	if !m.startsCollocation(words[i].s) {
		return 0, ""
	}
	for n := 4; n >= 2; n-- {
		if i+n > len(words) || words[i+n-1].clause != words[i].clause {
			continue
		}
		if function[words[i].s] && !m.db.Has(joinWords(words[i:i+n])) {
			continue
		}
		phrase := joinWords(words[i : i+n])
		if m.db.Has(phrase) {
			return n, phrase
		}
		head := joinWords(words[i : i+n-1])
		for p := range wordnet.POS(4) {
			for _, b := range m.db.Lemmatize(words[i+n-1].s, p) {
				if m.db.Has(head + " " + b) {
					return n, head + " " + b
				}
			}
		}
		// An inflected first word: "brought back", "checking in".
		for _, b := range m.db.Lemmatize(words[i].s, wordnet.Verb) {
			cand := b + " " + joinWords(words[i+1:i+n])
			if m.db.Has(cand) {
				return n, cand
			}
		}
	}
	return 0, ""
}

// particleVerb finds a phrasal verb split by its object ("bring it
// back", "pick them up"): the words it spans after words[i] (2) and the
// lemma; 0 when there is none.
func (m *Model) particleVerb(words []word, i int) (int, string) {
	if i+2 >= len(words) || words[i+2].clause != words[i].clause || !objectPronoun[words[i+1].s] {
		return 0, ""
	}
	for _, b := range m.db.Lemmatize(words[i].s, wordnet.Verb) {
		if cand := b + " " + words[i+2].s; m.db.Has(cand) {
			return 2, cand
		}
	}
	return 0, ""
}

var prepositions = set("of", "to", "in", "on", "at", "by", "for", "from", "into", "about", "over", "under", "within", "after", "before", "during", "through", "between", "per", "via", "until")

var objectPronoun = set("it", "them", "him", "her", "me", "us", "you", "this", "that", "everything", "something")

// token makes the token of one word or collocation.
func (m *Model) token(w string, clause int, condition bool) token {
	t := token{surface: w, clause: clause}
	if function[w] || (condition && (framing[w] || lightVerbs[w])) {
		return t
	}
	seen := map[string]bool{}
	for p := range wordnet.POS(4) {
		for _, l := range m.db.Lemmatize(w, p) {
			if !seen[l] {
				seen[l] = true
				t.lemmas = append(t.lemmas, l)
			}
		}
	}
	if len(t.lemmas) == 0 {
		t.lemmas = []string{w}
		t.pos = wordnet.Noun // a name, a product, a code: matched as written
		t.content = len(w) > 1 || unicode.IsDigit(rune(w[0]))
		return t
	}
	for _, l := range t.lemmas {
		if function[l] || (condition && framing[l]) {
			return token{surface: w, clause: clause}
		}
		// a framing verb and its preposition: "ask for", "talk about"
		if head, rest, ok := strings.Cut(l, " "); ok && condition && framing[head] && function[rest] {
			return token{surface: w, clause: clause}
		}
	}
	t.known = true
	t.content = true
	if ss := m.db.Senses(t.lemmas[0]); len(ss) > 0 {
		t.pos = m.majorityPOS(t.lemmas)
	}
	return t
}

// majorityPOS is the part of speech most of the lemmas' senses have: a
// rough tag, enough to weigh a word (nouns and adjectives say more than
// verbs and adverbs).
func (m *Model) majorityPOS(lemmas []string) wordnet.POS {
	var n [4]int
	for _, l := range lemmas {
		for _, s := range m.db.Senses(l) {
			n[m.db.POS(s)]++
		}
	}
	best := wordnet.Noun
	for p := range wordnet.POS(4) {
		if n[p] > n[best] {
			best = p
		}
	}
	return best
}

func isCalendarWord(w string) bool {
	return index(weekdays, strings.TrimSuffix(w, "s")) >= 0 || index(months, w) >= 0
}

// unpaid finds what costs nothing said with a negated verb or "nothing":
// "we won't charge you anything", "it costs nothing", "you don't pay
// for it" — the amount 0, like "free".
func (m *Model) unpaid(words []word, negated []bool) []quantity {
	var out []quantity
	for i, w := range words {
		if !paidVerbs[w.s] {
			continue
		}
		next := ""
		if i+1 < len(words) {
			next = words[i+1].s
		}
		if negated[i] || next == "nothing" {
			to := i + 1 + matchSeq(words, i+1, nothingToPay)
			out = append(out, quantity{dim: "money:any", values: []float64{0}, from: i, to: to, surface: w.s + " nothing", sent: w.sent})
		}
	}
	return out
}

// nothingToPay is what is not paid in "not pay a penny".
var nothingToPay = [][]string{{"a", "penny"}, {"a", "cent"}, {"a", "dime"}, {"a", "thing"}, {"anything"}, {"nothing"}, {"extra"}, {"a", "single", "penny"}}

var paidVerbs = set("charge", "charges", "charged", "charging", "cost", "costs", "pay", "pays", "paid", "paying")

// verbAfterSubject reports whether words[i], read as a noun only for
// following "the X", is rather the verb of X: it ends in -s after a
// singular noun, and WordNet knows its base more as a verb ("the store
// opens", "the clinic accepts") than as a noun ("the gift cards").
func (m *Model) verbAfterSubject(words []word, i int, lemmas []string) bool {
	w := words[i].s
	if i < 2 || nounBefore[words[i-1].s] || !strings.HasSuffix(w, "s") || strings.HasSuffix(w, "ss") || strings.HasSuffix(words[i-1].s, "s") {
		return false
	}
	verbs, nouns := 0, 0
	for _, l := range lemmas {
		for _, s := range m.db.Senses(l) {
			switch m.db.POS(s) {
			case wordnet.Verb:
				verbs++
			case wordnet.Noun:
				nouns++
			}
		}
	}
	return verbs > nouns
}

func (m *Model) hasVerb(lemma string) bool {
	for _, s := range m.db.Senses(lemma) {
		if m.db.POS(s) == wordnet.Verb {
			return true
		}
	}
	return false
}

func (m *Model) hasPOS(lemmas []string, p wordnet.POS) bool {
	for _, l := range lemmas {
		for _, s := range m.db.Senses(l) {
			if m.db.POS(s) == p {
				return true
			}
		}
	}
	return false
}

// startsCollocation: word, or one of its verb bases ("brought" → bring),
// begins a multi-word lemma.
func (m *Model) startsCollocation(w string) bool {
	if m.db.StartsCollocation(w) {
		return true
	}
	for _, b := range m.db.Lemmatize(w, wordnet.Verb) {
		if m.db.StartsCollocation(b) {
			return true
		}
	}
	return false
}
