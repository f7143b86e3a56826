package textsim

import "testing"

func TestJaccard(t *testing.T) {
	set := func(ws ...string) map[string]bool {
		m := map[string]bool{}
		for _, w := range ws {
			m[w] = true
		}
		return m
	}
	for _, c := range []struct {
		a, b map[string]bool
		want float64
	}{
		{set(), set(), 0},
		{set("a"), set(), 0},
		{set("a", "b"), set("a", "b"), 1},
		{set("a", "b"), set("c", "d"), 0},
		{set("a", "b", "c"), set("a", "b", "c", "d", "e"), 0.6},
		{set("a", "b"), set("b", "c"), 1.0 / 3},
	} {
		if got := Jaccard(c.a, c.b); got != c.want {
			t.Errorf("Jaccard(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Jaccard(c.b, c.a); got != c.want {
			t.Errorf("Jaccard is not symmetric for %v, %v", c.a, c.b)
		}
	}
}
