package testkit

import (
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// WantKind fails the test unless err is an application error of kind
// (what names the case).
func WantKind(t testing.TB, err error, kind apperr.Kind, what string) {
	t.Helper()
	if err == nil || apperr.KindOf(err) != kind {
		t.Fatalf("%s: got %v, want a %s error", what, err, kind)
	}
}
