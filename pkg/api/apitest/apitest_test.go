package apitest

import (
	"slices"
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

// Undeclared names the members an answer carries beyond its schema, at
// any depth, through combined schemas and arrays, and none of a map's.
func TestUndeclaredNamesWhatTheSchemaLacks(t *testing.T) {
	for _, c := range []struct {
		schema, body string
		want         []string
	}{
		{"FolderPathEntry", `{"id":"tfld_1","name":"Billing"}`, nil},
		{"FolderPathEntry", `{"id":"tfld_1","name":"Billing","colour":"red","size":{"n":1}}`, []string{"colour", "size"}},
		{"TestPage", `{"tests":[{"id":"test_1","folder_path":[{"id":"tfld_1","shade":1}]}],"has_more":false}`, []string{"tests.0.folder_path.0.shade"}},
		// TestReliability is an allOf; agent_latency is declared by its second part.
		{"TestReliability", `{"runs":1,"agent_latency":{"turns":0,"p99_ms":1},"invocations":[]}`, []string{"agent_latency.p99_ms"}},
		// A map's values are checked by additionalProperties; an object without properties holds anything.
		{"TestSummaries", `{"tests":{"test_1":{"id":"test_1","colour":1}}}`, []string{"tests.test_1.colour"}},
		{"ConfigOverride", `{"conversation_config":{"agent":{"anything":[1]}}}`, nil},
		// additionalProperties true declares every other member.
		{"MessageToolCall", `{"tool_details":{"type":"client","parameters":"{}","headers":{"a":"b"}}}`, nil},
		{"LatencyBudget", `{"turn_p95_ms":1,"p50_ms":1}`, []string{"p50_ms"}}, // additionalProperties false
		{"SecretCreate", `{"name":"n","value":"v","type":"new"}`, nil},
		{"LatencyBudget", `null`, nil},
	} {
		got, err := Undeclared(c.schema, []byte(c.body))
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s %s: %v %v, want %v", c.schema, c.body, got, err, c.want)
		}
	}
	if _, err := Undeclared("Nope", []byte(`{}`)); err == nil {
		t.Error("an unknown schema checked")
	}
}
