package offline

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The offline model's text normalisation: words are case-folded, split
// at every character that is neither a letter nor a digit (an apostrophe
// inside a word is dropped: can't → cant; a number keeps its decimal
// point or colon: 25.50, 9:00; a thousands comma goes: 1,000 → 1000;
// digits and letters are separate words: 9am → 9 am), number words up to
// twenty and the tens become digits (thirty → 30), and every other word
// is reduced to its stem (refunds, refunded → refund; policies → policy;
// cancelled, cancellation → cancel). Everything here is a pure function
// of its input: no maps are iterated for output.

// term is a content word: as written (lower-cased), its stem and whether
// it is a number (which must match exactly).
type term struct {
	word, stem string
	number     bool
}

// splitWords is the lower-cased words of s, in order.
func splitWords(s string) []string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return splitRunes([]rune(s))
		}
	}
	return splitASCII(s)
}

// splitASCII is splitWords of ASCII text: words are slices of s lowered
// (no copy when s has no capital letter) but for the rare word that
// loses an apostrophe or a thousands comma.
func splitASCII(s string) []string {
	lower := s
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			lower = strings.ToLower(s)
			break
		}
	}
	out := make([]string, 0, len(s)/6+1)
	start, prefix := -1, "" // the word is prefix + lower[start:i]
	flush := func(i int) {
		if start >= 0 && (prefix != "" || i > start) {
			out = append(out, prefix+lower[start:i])
		}
		start, prefix = -1, ""
	}
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	isLetter := func(c byte) bool { return c >= 'a' && c <= 'z' }
	var last byte // the last character of the word
	for i := 0; i < len(lower); i++ {
		c := lower[i]
		var next byte
		if i+1 < len(lower) {
			next = lower[i+1]
		}
		switch {
		case isDigit(c) || isLetter(c):
			if start >= 0 && isDigit(c) != isDigit(last) && last != '.' && last != ':' {
				flush(i) // 9am → 9 am
			}
			if start < 0 {
				start = i
			}
			last = c
		case c == '\'' && start >= 0 && isLetter(last) && isLetter(next):
			prefix, start = prefix+lower[start:i], i+1 // can't → cant
		case (c == '.' || c == ':') && start >= 0 && isDigit(last) && isDigit(next):
			last = c // 25.50, 9:00
		case c == ',' && start >= 0 && isDigit(last) && thousands(lower[i+1:]):
			prefix, start = prefix+lower[start:i], i+1 // 1,000 → 1000
		default:
			flush(i)
			last = 0
		}
	}
	flush(len(lower))
	return out
}

// splitRunes is splitWords of text that is not all ASCII.
func splitRunes(rs []rune) []string {
	var out []string
	var b strings.Builder
	var last rune // the last rune written to b
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	for i, r := range rs {
		next := rune(0)
		if i+1 < len(rs) {
			next = rs[i+1]
		}
		switch {
		case unicode.IsDigit(r):
			if b.Len() > 0 && !unicode.IsDigit(last) && last != '.' && last != ':' {
				flush() // am9 → am 9
			}
			b.WriteRune(r)
			last = r
		case unicode.IsLetter(r):
			if b.Len() > 0 && unicode.IsDigit(last) {
				flush() // 9am → 9 am
			}
			b.WriteRune(unicode.ToLower(r))
			last = r
		case (r == '\'' || r == '’') && b.Len() > 0 && unicode.IsLetter(last) && unicode.IsLetter(next):
			// inside a word: can't → cant, customer's → customers
		case (r == '.' || r == ':') && unicode.IsDigit(last) && unicode.IsDigit(next) && b.Len() > 0:
			b.WriteRune(r)
			last = r
		case r == ',' && unicode.IsDigit(last) && b.Len() > 0 && thousands(string(rs[i+1:min(i+5, len(rs))])):
			// 1,000 → 1000
		default:
			flush()
			last = 0
		}
	}
	flush()
	return out
}

// thousands reports whether s starts with exactly three digits.
func thousands(s string) bool {
	if len(s) < 3 {
		return false
	}
	for i := range 3 {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) == 3 || s[3] < '0' || s[3] > '9'
}

var numberWords = map[string]string{
	"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
	"eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13", "fourteen": "14",
	"fifteen": "15", "sixteen": "16", "seventeen": "17", "eighteen": "18", "nineteen": "19", "twenty": "20",
	"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90",
	"hundred": "100", "thousand": "1000",
}

// normalize is the word's stem, or for a number its digits.
func normalize(w string) (string, bool) {
	if n, ok := numberWords[w]; ok {
		return n, true
	}
	if w != "" && w[0] >= '0' && w[0] <= '9' {
		return w, true
	}
	return stem(w), false
}

// stopwords are left out of what is matched: function words, words that
// describe the conversation rather than its content ("the agent explains
// …"), and greetings.
var stopwords = wordSet(`a an the and or but if then so to of in on at by for with from as is are was were be been
	being it its this that these those i you he she we they me my your our ours yours their them us do does did done
	not no yes can could should would will shall may might must has have had what which who whom when where why how
	all any each more most other some such only own same than too very just about into over after before again further
	once here there up down out off also am
	agent agents user users response responses reply replies respond responds responded answer answers answered
	says say said message messages true false
	cant dont wont isnt arent doesnt didnt im ive youre youve theyre thats whats
	please get gets got want wants wanted like need needs know let lets tell tells told
	explain explains explained explaining state states stated mention mentions mentioned describe describes described
	inform informs informed provide provides provided
	hi hello hey hiya howdy greetings yo thanks thank ok okay`)

// conditionStopwords are also left out of a success condition: whom the
// reply addresses and how it sounds, which the offline judge cannot see.
var conditionStopwords = wordSet(`customer customers caller callers client clients person
	offer offers offered politely polite friendly friendlier clearly clear correctly correct accurately accurate
	briefly brief concisely concise properly appropriately professionally professional courteously courteous
	helpful helpfully warmly warm kindly`)

// greetingWords make a message a greeting when it has no other content
// word ("Good morning!"), and cover a condition's "greets".
var greetingWords = wordSet(`hi hello hey hiya howdy greetings yo good morning afternoon evening day there welcome`)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// contentTerms is the content words of s, each stem once, in the order
// they first appear; words in stop or extra are left out.
func contentTerms(s string, extra map[string]bool) []term {
	var out []term
	var seen map[string]bool // once out is long; a short list is scanned
words:
	for _, w := range splitWords(s) {
		if stopwords[w] || extra[w] || (len(w) == 1 && !unicode.IsDigit(rune(w[0]))) {
			continue
		}
		st, num := normalize(w)
		switch {
		case seen != nil:
			if seen[st] {
				continue
			}
			seen[st] = true
		default:
			for _, t := range out {
				if t.stem == st {
					continue words
				}
			}
			if len(out) == 32 {
				seen = map[string]bool{st: true}
				for _, t := range out {
					seen[t.stem] = true
				}
			}
		}
		out = append(out, term{word: w, stem: st, number: num})
	}
	return out
}

// stemSet is the normalised form of every word of s, stopwords included.
func stemSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range splitWords(s) {
		st, _ := normalize(w)
		out[st] = true
	}
	return out
}

// stem strips the common English suffixes from a lower-cased word, so
// that the forms people write meet: plurals (refunds, policies, boxes),
// -ed and -ing (refunded, cancelled, booking, shipping), a few
// derivations (cancellation, payment, refundable, weekly) and a final e
// (reserve and reserved, make and making). It is not a full stemmer
// (Porter's does far more); words that are not plain ASCII letters stay
// as they are.
func stem(w string) string {
	if len(w) < 3 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	// Plurals and the third person.
	switch {
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "us") || strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s") && len(w) > 3:
		w = w[:len(w)-1]
	}
	// -ed and -ing.
	switch {
	case strings.HasSuffix(w, "ied") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "eed"):
	case strings.HasSuffix(w, "ed") && hasVowel(w[:len(w)-2]) && len(w) > 3:
		w = undouble(w[:len(w)-2])
	case strings.HasSuffix(w, "ing") && hasVowel(w[:len(w)-3]) && len(w) > 4:
		w = undouble(w[:len(w)-3])
	}
	// A few derivations.
	for _, d := range [...]struct {
		suffix string
		min    int // letters the stem keeps
	}{{"ation", 3}, {"ment", 3}, {"able", 4}, {"ly", 4}} {
		if strings.HasSuffix(w, d.suffix) && len(w)-len(d.suffix) >= d.min {
			w = w[:len(w)-len(d.suffix)]
			break
		}
	}
	if len(w) >= 3 && w[len(w)-1] == 'e' {
		w = w[:len(w)-1]
	}
	if len(w) >= 5 && strings.HasSuffix(w, "ll") {
		w = w[:len(w)-1] // cancell(ed) → cancel, install → instal
	}
	return w
}

func hasVowel(s string) bool { return strings.ContainsAny(s, "aeiouy") }

// undouble drops one of a final double consonant (shipp → ship) but for
// l, s and z, and never from a stem shorter than four letters (add).
func undouble(w string) string {
	n := len(w)
	if n >= 4 && w[n-1] == w[n-2] && !strings.ContainsRune("aeioulsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

// sentence is a candidate answer of the agent's configuration: its text
// and what it is matched against.
type sentence struct {
	text  string
	match string // what a question is matched against: the sentence and the words its heading, lead-in or FAQ question lend it
}

// knowledge splits a system prompt into candidate answers. Lines are
// split into sentences at . ! ? followed by a space (not after an
// abbreviation such as e.g. or an initial); bullets (-, *, •, 1., a)) and
// Q:/A: labels are dropped; a markdown heading (# …) lends its words to
// the sentences under it up to the blank line after them; a line ending
// in a colon ("Refund policy:") is a lead-in that prefixes the sentences
// after it up to a blank line; a
// question ("Do you deliver?") is not an answer but lends its words to
// the sentence after it.
func knowledge(prompt string) []sentence {
	var out []sentence
	heading, leadIn, question := "", "", ""
	headed := false // a sentence follows the heading
	for _, line := range strings.Split(prompt, "\n") {
		l := strings.TrimSpace(line)
		if l == "" {
			leadIn = ""
			if headed {
				heading, headed = "", false
			}
			continue
		}
		if strings.HasPrefix(l, "#") {
			heading, headed, leadIn, question = strings.TrimSpace(strings.TrimLeft(l, "#")), false, "", ""
			continue
		}
		ss := splitSentences(stripLabel(stripBullet(l)))
		if n := len(ss); n > 0 && strings.HasSuffix(ss[n-1], ":") {
			leadIn, ss = ss[n-1], ss[:n-1]
		}
		for _, s := range ss {
			s = stripLabel(s)
			if s == "" {
				continue
			}
			if strings.HasSuffix(s, "?") {
				question = s
				continue
			}
			text, context := s, heading+" "+question
			if leadIn != "" {
				text = leadIn + " " + s
				context += " " + leadIn
			}
			question, headed = "", heading != ""
			if !strings.ContainsAny(text[len(text)-1:], ".!?") {
				text += "."
			}
			out = append(out, sentence{text: text, match: s + ". " + context})
		}
	}
	return out
}

// stripBullet drops a list marker: - * • + – — or 1. 1) a).
func stripBullet(l string) string {
	for _, b := range []string{"- ", "* ", "• ", "+ ", "– ", "— ", "· "} {
		if strings.HasPrefix(l, b) {
			return strings.TrimSpace(l[len(b):])
		}
	}
	i := 0
	for i < len(l) && i < 3 && l[i] >= '0' && l[i] <= '9' {
		i++
	}
	if i == 0 && len(l) > 2 && l[0] >= 'a' && l[0] <= 'z' && l[1] == ')' {
		i = 1 // a) b) c)
	}
	if i > 0 && i+1 < len(l) && (l[i] == '.' || l[i] == ')') && l[i+1] == ' ' {
		return strings.TrimSpace(l[i+2:])
	}
	return l
}

// stripLabel drops a Q:, A:, Question: or Answer: label.
func stripLabel(s string) string {
	for _, p := range []string{"q:", "a:", "question:", "answer:"} {
		if len(s) > len(p) && strings.EqualFold(s[:len(p)], p) {
			return strings.TrimSpace(s[len(p):])
		}
	}
	return s
}

var abbreviations = wordSet(`e.g. i.e. etc. vs. mr. mrs. ms. dr. st. no. approx. incl. min. max.`)

// splitSentences splits one line after . ! ? (or a run of them) followed
// by a space, but not after an abbreviation or a single-letter initial.
func splitSentences(l string) []string {
	var out []string
	start := 0
	for i := 0; i < len(l); i++ {
		c := l[i]
		if c != '.' && c != '!' && c != '?' {
			continue
		}
		j := i
		for j+1 < len(l) && (l[j+1] == '.' || l[j+1] == '!' || l[j+1] == '?') {
			j++
		}
		if j+1 < len(l) && l[j+1] != ' ' && l[j+1] != '\t' {
			i = j
			continue // 25.50, acme.com
		}
		if c == '.' && j == i {
			w := l[strings.LastIndexAny(l[:i], " \t(")+1 : i+1]
			if abbreviations[strings.ToLower(w)] || (len(w) == 2 && unicode.IsUpper(rune(w[0]))) {
				i = j
				continue
			}
		}
		if s := strings.TrimSpace(l[start : j+1]); s != "" {
			out = append(out, s)
		}
		start, i = j+1, j
	}
	if s := strings.TrimSpace(l[start:]); s != "" {
		out = append(out, s)
	}
	return out
}
