package meaning

import "crypto/sha256"

// Cover reads which of a question's content words and amounts each
// candidate answer covers, by meaning: a candidate covers a word when
// one of its words relates to it in WordNet ("Refunds are possible
// within 30 days" covers "return" in "Can I return the jacket?"), and an
// amount when it states one of the same kind (a question about Sunday is
// answered by "we are open Monday to Saturday"). Polarity does not
// matter: "we do not deliver on Sundays" answers "do you deliver on
// Sundays?". It answers the question's words (amounts as written) and,
// per candidate, a hit per word.
func (m *Model) Cover(question string, candidates []string) (asked []string, hits [][]bool) {
	q := m.analyseQuestion(question)
	var toks []token
	for _, t := range q.tokens {
		if t.content {
			toks = append(toks, t)
			asked = append(asked, t.surface)
		}
	}
	for _, a := range q.amounts {
		asked = append(asked, a.surface)
	}
	hits = make([][]bool, len(candidates))
	for i, c := range candidates {
		ct := m.candidate(c)
		hits[i] = make([]bool, len(asked))
		for j, qt := range toks {
			for _, r := range ct.tokens {
				if r.content && m.relate(qt, r).score >= supported {
					hits[i][j] = true
					break
				}
			}
		}
		for j, a := range q.amounts {
			for _, r := range ct.amounts {
				if a.comparable(r) {
					hits[i][len(toks)+j] = true
					break
				}
			}
		}
	}
	return asked, hits
}

// Similarity is how alike two texts are in meaning, from 0 to 1: the
// mean of the share of each one's content (words and amounts) that the
// other supports with the same polarity.
func (m *Model) Similarity(a, b string) float64 {
	key := sha256.Sum256([]byte("similarity\x00" + a + "\x00" + b))
	return memoised(m.similar, key, func() float64 { return m.similarity(a, b) })
}

func (m *Model) similarity(a, b string) float64 {
	ta, tb := m.analyse(a, false), m.analyse(b, false)
	ta.refuses, tb.refuses = Refuses(a), Refuses(b)
	return (m.supportShare(ta, tb) + m.supportShare(tb, ta)) / 2
}

func (m *Model) supportShare(from, to text) float64 {
	n, got := 0, 0
	if from.refuses { // "I don't know" is like "I'm not sure", though no content word is shared
		n++
		if to.refuses {
			got++
		}
	}
	for _, t := range from.tokens {
		if !t.content {
			continue
		}
		n++
		if len(m.supportOf(item{tok: &t}, to, false, noneAside).sents) > 0 {
			got++
		}
	}
	for _, q := range from.amounts {
		n++
		if len(m.supportOf(item{amount: &q}, to, false, noneAside).sents) > 0 {
			got++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(got) / float64(n)
}

// noneAside: likeness reads support only, not what an amount is said of.
func noneAside(quantity) bool { return false }

// candidate is a candidate answer read as a question is (a prompt's
// "given", "get", "tell" answer nothing either), memoised: every run of
// an invocation reads its agent's prompt again.
func (m *Model) candidate(s string) text {
	return memoised(m.candidates, s, func() text { return m.analyseQuestion(s) })
}
