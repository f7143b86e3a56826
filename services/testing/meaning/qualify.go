package meaning

import (
	"fmt"
	"strings"
)

// What a reply says can be weaker than what it seems to say: it may only
// say that a thing may be so (a hedge), or make an absolute ("free", "at
// any time") hold only under a condition (a qualifier). People do not
// accept either for a condition that states the thing plainly.

// hedgeAdverbs say that a thing is only possibly so.
var hedgeAdverbs = set("possibly", "probably", "perhaps", "maybe", "hopefully", "likely", "unlikely", "presumably", "supposedly")

// hedgePhrases say the speaker does not know.
var hedgePhrases = [][]string{
	{"not", "sure"}, {"not", "certain"}, {"no", "guarantee"}, {"not", "guarantee"}, {"i", "think"}, {"i", "believe"},
	{"we", "think"}, {"to", "be", "confirmed"}, {"tbc"}, {"will", "know"}, {"let", "you", "know"}, {"depends", "on"}, {"it", "depends"},
}

// addressees are who a modal gives leave or advice to ("you may bring",
// "you should arrive"), not a hedge on what is so.
var addressees = set("you", "your", "guests", "customers", "callers", "patients", "members", "residents", "visitors", "parents", "students", "applicants", "passengers", "tenants", "drivers", "owners")

// hedgedSentences is the sentences of words that say a thing only may
// be so ("it should be ready later", "the sailing may be cancelled", "I
// think it's free").
func hedgedSentences(words []word) map[int]bool {
	out := map[int]bool{}
	for i, w := range words {
		if w.asks {
			continue
		}
		switch {
		case hedgeAdverbs[w.s]:
			out[w.sent] = true
		case w.s == "may" || w.s == "might" || w.s == "could" || w.s == "should":
			next := ""
			if i+1 < len(words) {
				next = words[i+1].s
			}
			if next == "not" && i+2 < len(words) {
				next = words[i+2].s
			}
			if (next == "be" || next == "have") && (i == 0 || !addressees[words[i-1].s]) {
				out[w.sent] = true
			}
		case matchSeq(words, i, hedgePhrases) > 0:
			out[w.sent] = true
		}
	}
	return out
}

// restrictors make what a sentence says hold only sometimes ("any time
// during office hours", "free when you buy frames; otherwise £25").
var restrictors = set("otherwise", "except", "unless", "excluding", "only", "provided", "providing", "during", "between", "until", "till", "apart")

// feeRestrictors, beside a charge, make "free" hold only sometimes ("free
// — you just pay the insurance", "free, plus £5 delivery").
var feeRestrictors = set("otherwise", "except", "unless", "only", "just", "when", "if", "provided", "providing", "plus", "apart")

// absolutes are the words of a condition that allow no exception ("on
// weekdays" is every weekday); an absolute of days is not restricted by
// hours ("open every day from 9").
var (
	absolutes = [][]string{{"any", "time"}, {"anytime"}, {"whenever"}, {"always"}, {"unlimited"}, {"at", "all", "times"},
		{"every", "day"}, {"weekdays"}, {"weekends"}, {"mondays"}, {"tuesdays"}, {"wednesdays"}, {"thursdays"}, {"fridays"}, {"saturdays"}, {"sundays"}}
	dayAbsolutes  = set("every day", "weekdays", "weekends", "mondays", "tuesdays", "wednesdays", "thursdays", "fridays", "saturdays", "sundays")
	dayRestrictor = set("otherwise", "except", "unless", "excluding", "only", "apart")
)

// qualified reports how the reply makes an absolute of the condition
// hold only sometimes, in the sentences that say it (sents, and the one
// after each: a dash or a semicolon often sets the exception apart), or
// "".
func qualified(condWords []word, cond, rep text, sents []int) string {
	in := map[int]bool{}
	for _, s := range sents {
		in[s], in[s+1] = true, true
	}
	free := false
	for _, q := range cond.amounts {
		if q.dim == "money:any" && !q.negated && !q.asks {
			free = true
		}
	}
	absolute := ""
	for i := range condWords {
		if n := matchSeq(condWords, i, absolutes); n > 0 {
			absolute = joinWords(condWords[i : i+n])
			break
		}
	}
	if !free && absolute == "" {
		return ""
	}
	if free {
		var charge *quantity
		for k, q := range rep.amounts {
			if strings.HasPrefix(q.dim, "money:") && !q.negated && !q.asks && in[q.sent] && nonZero(q) {
				charge = &rep.amounts[k]
				break
			}
		}
		if charge != nil {
			for _, w := range rep.words {
				if in[w.sent] && feeRestrictors[w.s] && !w.asks {
					return fmt.Sprintf("free only sometimes: %q, %q", w.s, charge.surface)
				}
			}
		}
	}
	if absolute != "" {
		for _, w := range rep.words {
			if in[w.sent] && restrictors[w.s] && !w.asks && (!dayAbsolutes[absolute] || dayRestrictor[w.s]) {
				return fmt.Sprintf("%q only %s", absolute, w.s+" …")
			}
		}
	}
	return ""
}

func nonZero(q quantity) bool {
	for _, v := range q.values {
		if v != 0 {
			return true
		}
	}
	return false
}

// chargeWords name a charge: a condition that forbids one is broken by a
// reply that names an amount to pay.
var chargeWords = set("charge", "charges", "charged", "charging", "fee", "fees", "cost", "costs", "price", "pay", "payment", "surcharge", "deposit")

// forbidsCharge reports whether a prohibition's words name a charge.
func forbidsCharge(condWords []word) bool {
	for _, w := range condWords {
		if chargeWords[w.s] {
			return true
		}
	}
	return false
}

// chargeNamed is the first amount of money, not nothing, that the reply
// states, or "".
func chargeNamed(rep text) string {
	for _, q := range rep.amounts {
		if strings.HasPrefix(q.dim, "money:") && !q.negated && !q.asks && nonZero(q) {
			return q.surface
		}
	}
	return ""
}

// pastMarkers say a thing is done ("has been paid", "was sent");
// futureMarkers that it is yet to be ("will be paid once …").
var (
	pastMarkers   = set("has", "have", "was", "were", "already", "had", "done")
	futureMarkers = set("will", "shall", "once", "soon", "going")
)

// onlyPromised reports whether a condition states that a thing is done
// and the sentences that say it say only that it will be: "it will be
// paid once your details are checked" does not say it has been paid.
func onlyPromised(condWords []word, rep text, sents []int) bool {
	past := false
	for i, w := range condWords {
		// "has been", "was sent": an auxiliary of the past, not "has a fee"
		if (w.s == "has" || w.s == "have" || w.s == "had") && i+1 < len(condWords) && condWords[i+1].s == "been" || w.s == "was" || w.s == "were" || w.s == "already" {
			past = true
		}
		if futureMarkers[w.s] {
			return false
		}
	}
	if !past {
		return false
	}
	in := map[int]bool{}
	for _, s := range sents {
		in[s] = true
	}
	future := map[int]bool{}
	for _, w := range rep.words {
		if !in[w.sent] {
			continue
		}
		if pastMarkers[w.s] {
			return false
		}
		if futureMarkers[w.s] {
			future[w.sent] = true
		}
	}
	return len(future) > 0
}
