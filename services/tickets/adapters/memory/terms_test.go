package memory

import (
	"testing"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// appendSearchText folds any text as app.SearchText does.
func FuzzAppendSearchText(f *testing.F) {
	for _, s := range []string{"", " ", "Refund  PROMISED\t\n", "\v\fa\rb ", "Réponse  lente", "a\u00a0b", "a\u0085b", "\xff x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendSearchText([]byte("kept"), s)), "kept"+app.SearchText(s); got != want {
			t.Fatalf("%q: %q, want %q", s, got, want)
		}
	})
}
