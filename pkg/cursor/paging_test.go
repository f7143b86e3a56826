package cursor

import (
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

func TestPaging(t *testing.T) {
	c := NewCodec([]byte("key"))
	type pos struct{ ID string }
	scope := Scope("agents", "ws", "refunds")
	if after, err := After[pos](c, scope, ""); after != nil || err != nil {
		t.Fatalf("no cursor: %v %v", after, err)
	}
	next, err := Next(c, scope, pos{"agent_9"})
	if err != nil || next == nil {
		t.Fatal(err)
	}
	after, err := After[pos](c, scope, *next)
	if err != nil || after.ID != "agent_9" {
		t.Fatalf("round trip: %v %v", after, err)
	}
	for _, other := range []string{Scope("agents", "ws", "other"), Scope("agents", "ws2", "refunds"), Scope("agents", "wsrefunds")} {
		if _, err := After[pos](c, other, *next); apperr.KindOf(err) != apperr.Invalid {
			t.Fatalf("a cursor used with other filters (%q): %v", other, err)
		}
	}
	if _, err := After[pos](c, scope, "garbage"); apperr.KindOf(err) != apperr.Invalid {
		t.Fatalf("a corrupted cursor: %v", err)
	}
}
