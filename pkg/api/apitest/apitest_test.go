package apitest

import (
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/api"
)

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

// Decode refuses what the schema refuses, and decodes what it accepts.
func TestDecodeIsTheEdgeThenTheHandler(t *testing.T) {
	type member struct {
		Email string `json:"email"`
	}
	if m, err := Decode[member](api.AddMember, []byte(`{"email":"a@example.com"}`)); err != nil || m.Email != "a@example.com" {
		t.Fatalf("an accepted body: %+v %v", m, err)
	}
	if _, err := Decode[member](api.AddMember, []byte(`{"email":5}`)); err == nil {
		t.Fatal("a body against the schema was decoded")
	}
	if _, err := Decode[member](api.AddMember, []byte(`{"email":`)); err == nil {
		t.Fatal("malformed JSON was decoded")
	}
}
