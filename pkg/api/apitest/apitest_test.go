package apitest

import "testing"

// failures records what a check reports instead of failing the test.
type failures struct {
	testing.TB
	errors int
}

func (f *failures) Helper()               {}
func (f *failures) Errorf(string, ...any) { f.errors++ }

func TestWantIntAndWantStringsReportADifference(t *testing.T) {
	limit := Int(t, "TicketTitle", "maxLength")
	enum := Strings(t, "Priority", "enum")
	for _, c := range []struct {
		check func(testing.TB)
		fails bool
	}{
		{func(tb testing.TB) { WantInt(tb, limit, "TicketTitle", "maxLength") }, false},
		{func(tb testing.TB) { WantInt(tb, limit+1, "TicketTitle", "maxLength") }, true},
		{func(tb testing.TB) { WantStrings(tb, enum, "Priority", "enum") }, false},
		{func(tb testing.TB) { WantStrings(tb, enum[1:], "Priority", "enum") }, true},
	} {
		f := &failures{TB: t}
		c.check(f)
		if (f.errors > 0) != c.fails {
			t.Errorf("a check reported %d failures, want failing %v", f.errors, c.fails)
		}
	}
}
