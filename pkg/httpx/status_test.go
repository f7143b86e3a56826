package httpx

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// Every kind of the catalog has its own HTTP status; field errors are
// 422; anything outside the catalog is 500.
func TestEveryKindHasItsStatus(t *testing.T) {
	seen := map[int]apperr.Kind{}
	for _, k := range apperr.Kinds {
		s := StatusOf(fmt.Errorf("wrapped: %w", apperr.New(k, "x", "y")))
		if s < 400 || (s == http.StatusInternalServerError) != (k == apperr.Internal) {
			t.Errorf("kind %s answers %d", k, s)
		}
		if other, dup := seen[s]; dup {
			t.Errorf("kinds %s and %s both answer %d", k, other, s)
		}
		seen[s] = k
	}
	var v apperr.Validator
	v.Add("Field required", "missing", "body", "name")
	if s := StatusOf(v.Err()); s != http.StatusUnprocessableEntity {
		t.Errorf("field errors answer %d", s)
	}
	if s := StatusOf(errors.New("boom")); s != http.StatusInternalServerError {
		t.Errorf("an error outside the catalog answers %d", s)
	}
}
