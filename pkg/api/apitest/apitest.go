// Package apitest reads the API's schemas in tests, so that a service's
// test can check that the limits its own code relies on are the ones its
// schemas say.
package apitest

import (
	"slices"
	"strconv"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/api"
)

// At is the value at path (member names, or list indexes as "0", "1"…)
// in the schema called name, with its references resolved.
func At(t testing.TB, name string, path ...string) any {
	t.Helper()
	s, err := api.Schema(name)
	if err != nil {
		t.Fatal(err)
	}
	var v any = s
	for i, p := range path {
		switch node := v.(type) {
		case map[string]any:
			v = node[p]
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(node) {
				t.Fatalf("%s %v: no item %s", name, path[:i+1], p)
			}
			v = node[n]
		default:
			t.Fatalf("%s %v: %v has no member %s", name, path[:i], v, p)
		}
	}
	return v
}

// Int is the number at path, as an int.
func Int(t testing.TB, name string, path ...string) int {
	t.Helper()
	switch n := At(t, name, path...).(type) {
	case int:
		return n
	case float64:
		return int(n)
	case nil:
		t.Fatalf("%s %v: absent", name, path)
	default:
		t.Fatalf("%s %v: %v is not a number", name, path, n)
	}
	return 0
}

// Strings is the list of strings at path (an enum, say).
func Strings(t testing.TB, name string, path ...string) []string {
	t.Helper()
	list, ok := At(t, name, path...).([]any)
	if !ok {
		t.Fatalf("%s %v: not a list", name, path)
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("%s %v: %v is not a string", name, path, v)
		}
		out = append(out, s)
	}
	return out
}

// WantInt fails t unless the number at path is want: a limit the code
// relies on is the one the schema says.
func WantInt(t testing.TB, want int, name string, path ...string) {
	t.Helper()
	if got := Int(t, name, path...); got != want {
		t.Errorf("%s %v: the schema says %d, the code %d", name, path, got, want)
	}
}

// WantStrings fails t unless the list of strings at path is want, in
// order: an enum the code relies on is the one the schema says.
func WantStrings(t testing.TB, want []string, name string, path ...string) {
	t.Helper()
	if got := Strings(t, name, path...); !slices.Equal(got, want) {
		t.Errorf("%s %v: the schema says %q, the code %q", name, path, got, want)
	}
}
