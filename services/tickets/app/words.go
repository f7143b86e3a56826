package app

import (
	"bytes"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Words gathers the search words (SearchWords) of a text given in pieces,
// such as a transcript's messages, lower-cased straight into one buffer:
// no copy of the whole text, of its lower-cased form or of a list of
// fields is made on the way. A replay reads tens of thousands of
// transcripts in a row, and what each left behind was most of the
// garbage the collector had to chase. Reset makes it ready to be reused.
type Words struct {
	text  []byte     // the words, lower-cased, one after the other
	spans []wordSpan // where each word is in text
}

type wordSpan struct{ start, end uint32 }

// Add adds the words of one piece: a piece's end ends a word.
func (w *Words) Add(text string) {
	start := len(w.text)
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
			// An invalid byte reads as utf8.RuneError, which is no letter:
			// it ends a word, as strings.ToLower's replacement does.
		}
		i += size
		switch {
		case r < utf8.RuneSelf && ('a' <= r && r <= 'z' || '0' <= r && r <= '9'):
			w.text = append(w.text, byte(r))
		case 'A' <= r && r <= 'Z':
			w.text = append(w.text, byte(r)+'a'-'A')
		case r >= utf8.RuneSelf:
			if lr := unicode.ToLower(r); unicode.IsLetter(lr) || unicode.IsDigit(lr) {
				w.text = utf8.AppendRune(w.text, lr)
				continue
			}
			start = w.end(start)
		default:
			start = w.end(start)
		}
	}
	w.end(start)
}

// end ends the word begun at start, if any, and returns where the next
// one begins: a word longer than maxWordLen is dropped.
func (w *Words) end(start int) int {
	switch n := len(w.text) - start; {
	case n == 0:
	case n > maxWordLen:
		w.text = w.text[:start]
	default:
		w.spans = append(w.spans, wordSpan{uint32(start), uint32(len(w.text))})
	}
	return len(w.text)
}

// Sorted is the distinct words added since the last Reset, sorted. They
// are sorted and deduplicated in the buffer, then share one string made
// of the distinct ones: a call says each word several times.
func (w *Words) Sorted() []string {
	if len(w.spans) == 0 {
		return nil
	}
	word := func(s wordSpan) []byte { return w.text[s.start:s.end] }
	slices.SortFunc(w.spans, func(a, b wordSpan) int { return bytes.Compare(word(a), word(b)) })
	w.spans = slices.CompactFunc(w.spans, func(a, b wordSpan) bool { return bytes.Equal(word(a), word(b)) })
	size := 0
	for _, s := range w.spans {
		size += int(s.end - s.start)
	}
	var b strings.Builder
	b.Grow(size)
	for _, s := range w.spans {
		b.Write(word(s))
	}
	text, words := b.String(), make([]string, len(w.spans))
	at := 0
	for i, s := range w.spans {
		n := int(s.end - s.start)
		words[i], at = text[at:at+n], at+n
	}
	return words
}

// Reset forgets the words added, keeping the buffers.
func (w *Words) Reset() { w.text, w.spans = w.text[:0], w.spans[:0] }
