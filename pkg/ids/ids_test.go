package ids

import (
	"errors"
	"strings"
	"testing"
)

func TestNewIsPrefixedUniqueAndSortable(t *testing.T) {
	seen := map[string]bool{}
	prev := ""
	for range 1000 {
		id := New("agent")
		if !strings.HasPrefix(id, "agent_") || len(id) != len("agent_")+26 || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		if id <= prev {
			t.Fatalf("%q does not sort after %q", id, prev)
		}
		seen[id], prev = true, id
	}
}

func TestCheckGrammar(t *testing.T) {
	for _, ok := range []string{New("agent"), "ws_0123abcdef", "a", "A-b_9", strings.Repeat("x", MaxLen)} {
		if err := Check(ok); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", MaxLen+1), "a.b", "*", ">", "a b", "a\r\nPUB x", "é", "a\x00", "a/b", "%2e"} {
		if err := Check(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("Check(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

// FuzzCheck: whatever Check accepts is short, non-empty and made only of
// bytes that are safe inside a NATS subject token.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"agent_01jd", "", "a.b", "x\r\n", "日本", strings.Repeat("z", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if Check(s) != nil {
			return
		}
		if len(s) == 0 || len(s) > MaxLen {
			t.Fatalf("accepted %d bytes", len(s))
		}
		if strings.ContainsAny(s, ".*> \t\r\n\x00/") || strings.IndexFunc(s, func(r rune) bool { return r > 127 }) >= 0 {
			t.Fatalf("accepted %q", s)
		}
	})
}
