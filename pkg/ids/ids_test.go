package ids

import (
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
