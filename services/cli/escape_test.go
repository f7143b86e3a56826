package cli

import (
	"strings"
	"testing"

	"github.com/rivo/uniseg"
)

// Server-provided text reaches the terminal with its control characters
// escaped (a name could clear the screen or retitle the window); --json
// stays as the API sent it.
func TestControlCharactersAreEscaped(t *testing.T) {
	const evil = `Hours\u001b[2J\u001b]0;pwned\u0007\u009b\u007f`
	const shown = `Hours\x1b[2J\x1b]0;pwned\x07\u009b\x7f`
	f, base := newFake(t)
	f.on("GET /v1/convai/triage-tickets", reply(200, `{"agent_conversation_tickets":[{"agentqa_ticket_id":"tkt_1","status":"open","agent_id":"agent_1","title":"`+evil+`"}],"has_more":false}`))
	f.on("GET /v1/convai/triage-tickets/tkt_1", reply(200, `{"agentqa_ticket_id":"tkt_1","status":"open","agent_id":"agent_1","title":"`+evil+`",
	  "ticket_comments":[{"comment":"`+evil+`","created_at_unix_secs":1767322000,"owner_user_id":"usr_1"}]}`))
	f.on("GET /v1/convai/agent-testing", reply(200, `{"tests":[{"id":"test_1","name":"`+evil+`","type":"llm"}],"has_more":false}`))
	f.on("GET /v1/convai/test-invocations/tinv_1", reply(200, `{"id":"tinv_1","status":"completed","test_runs":[{"test_id":"test_1","test_name":"`+evil+`","status":"failed","error":"`+evil+strings.Repeat(" long", 30)+`"}]}`))
	for _, args := range [][]string{{"tickets", "list"}, {"tickets", "show", "tkt_1"}, {"tests", "list"}, {"tests", "invocation", "tinv_1"}} {
		r := runOn(t, base, args...)
		if r.code != ExitOK || strings.ContainsAny(r.stdout, "\x1b\x07\x7f\u009b") || !strings.Contains(r.stdout, shown) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := runOn(t, base, "tickets", "list", "--json"); !strings.Contains(r.stdout, evil) {
		t.Fatalf("--json: %q", r.stdout)
	}
}

// A line break in text the server sent (an endpoint's error, a ticket's
// QA comment) never starts a line of its own: what follows it is
// indented, so it cannot forge a line of the CLI's.
func TestServerTextCannotForgeALine(t *testing.T) {
	const forged = `refused\nPASSED  1  test_x  all good`
	f, base := newFake(t)
	f.on("GET /v1/convai/test-invocations/tinv_1", reply(200, `{"id":"tinv_1","status":"completed","test_runs":[{"test_id":"test_1","test_name":"Hours","status":"failed","error":"`+forged+strings.Repeat(" long", 30)+`"}]}`))
	f.on("GET /v1/convai/triage-tickets/tkt_1", reply(200, `{"agentqa_ticket_id":"tkt_1","status":"open","agent_id":"agent_1","title":"t","qa_comment":"`+forged+`"}`))
	for _, args := range [][]string{{"tests", "invocation", "tinv_1"}, {"tickets", "show", "tkt_1"}} {
		r := runOn(t, base, args...)
		if r.code != ExitOK || strings.Contains(r.stdout, "\nPASSED") || !strings.Contains(r.stdout, "\n    PASSED") {
			t.Fatalf("%v: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
}

// A table's columns line up on a terminal whatever the names hold: an
// emoji or a CJK character takes two cells there (tabwriter counted one
// rune); a bidirectional override, which would show the rest of its line
// reversed, is escaped like a control character, right-to-left text is not.
func TestTablesAlignByTerminalWidth(t *testing.T) {
	f, base := newFake(t)
	f.on("GET /v1/convai/agent-testing", reply(200, `{"tests":[{"id":"test_1","name":"Opening hours","type":"llm"},
	  {"id":"test_2","name":"Pizza 比萨 بيتزا","type":"llm"},{"id":"test_3","name":"Emoji 😀 \u202eevil","type":"tool"}],"has_more":false}`))
	r := runOn(t, base, "tests", "list")
	if r.code != ExitOK || strings.ContainsRune(r.stdout, '\u202e') || !strings.Contains(r.stdout, `Emoji 😀 \u202eevil`) || !strings.Contains(r.stdout, "بيتزا") {
		t.Fatalf("exit %d, stdout %q", r.code, r.stdout)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	at := func(line, cell string) int { return uniseg.StringWidth(line[:strings.Index(line, cell)]) }
	want := at(lines[0], "FOLDER") // the column after the names
	for i, line := range lines[1:] {
		if got := at(line, "/"); got != want {
			t.Errorf("row %d: the folder column starts at cell %d, want %d\n%s", i+1, got, want, r.stdout)
		}
	}
}
