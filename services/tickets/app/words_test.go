package app

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

// searchWordsByFields is the definition Words follows, written the
// obvious way: lower-case the text, split it where a rune is neither a
// letter nor a digit, drop the words over maxWordLen, sort, dedupe.
func searchWordsByFields(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	words = slices.DeleteFunc(words, func(w string) bool { return len(w) > maxWordLen })
	slices.Sort(words)
	return slices.Compact(words)
}

var wordTexts = []string{
	"",
	"   ",
	"Where is my REFUND? Order #4417, refund refund.",
	"Ünïcödé ÀÉÎ straße İstanbul ΣΊΣΥΦΟΣ 東京 ١٢٣ x²",
	"invalid \xff\xfe bytes\xc3 and a lone \xed\xa0\x80 surrogate",
	strings.Repeat("a", maxWordLen) + " " + strings.Repeat("b", maxWordLen+1) + " " + strings.Repeat("é", 20) + " " + strings.Repeat("é", 21),
	"tab\tnew\nline\u00a0nbsp\u2028sep",
	"KELVIN \u212a sign, ǅ titlecase, \U0001F600 emoji",
}

func TestWordsAreTheSearchWordsOfTheirText(t *testing.T) {
	for _, text := range wordTexts {
		if got, want := SearchWords(text), searchWordsByFields(text); !slices.Equal(got, want) {
			t.Errorf("SearchWords(%q) = %q, want %q", text, got, want)
		}
	}
}

// Pieces added one by one say what the pieces joined by a space say, and
// a reset forgets what came before it.
func TestWordsOfPiecesAreTheWordsOfTheirJoin(t *testing.T) {
	var w Words
	w.Add("stale words")
	w.Reset()
	for _, text := range wordTexts {
		w.Add(text)
	}
	if got, want := w.Sorted(), searchWordsByFields(strings.Join(wordTexts, " ")); !slices.Equal(got, want) {
		t.Errorf("pieces: %q, want %q", got, want)
	}
}

func FuzzSearchWords(f *testing.F) {
	for _, text := range wordTexts {
		f.Add(text, "a piece")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := SearchWords(a), searchWordsByFields(a); !slices.Equal(got, want) {
			t.Fatalf("SearchWords(%q) = %q, want %q", a, got, want)
		}
		var w Words
		w.Add(a)
		w.Add(b)
		if got, want := w.Sorted(), searchWordsByFields(a+" "+b); !slices.Equal(got, want) {
			t.Fatalf("pieces %q, %q: %q, want %q", a, b, got, want)
		}
	})
}
