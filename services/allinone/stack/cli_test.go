package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/wire"
	"github.com/voiceai-platform/voiceai/services/cli"
)

// refundPromiseTest fails on agentWith's agent: it expects a refund the
// prompt says is never given.
const refundPromiseTest = `{"type":"llm","name":"Refund promise",
  "chat_history":[{"role":"user","message":"Will I get a refund for cancelled bookings?","time_in_call_secs":2}],
  "success_examples":[{"response":"Yes, you will get a full refund right away.","type":"success"}],
  "failure_examples":[{"response":"Refunds are never given for cancelled bookings.","type":"failure"}]}`

// The voiceai CLI, run in-process against a real stack with the offline
// model: tests run --wait exits 0 when every run passes, 1 when one fails,
// 2 on a bad key or an unknown agent, and its JUnit file has the failures.
func TestCLI(t *testing.T) {
	t.Parallel()
	// Every operation the CLI calls is one of the API's.
	for _, r := range cli.Routes() {
		if !slices.ContainsFunc(api.Operations, func(op api.Operation) bool { return op.Method == r[0] && op.Path == r[1] }) {
			t.Errorf("the CLI calls %s %s, which is not in pkg/api", r[0], r[1])
		}
	}

	s := startAdmin(t, localHooks)
	base := "http://" + s.Addr
	voiceai := func(key string, args ...string) (int, string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var out, errOut bytes.Buffer
		code := cli.Run(ctx, append(args, "--base-url", base, "--api-key", key), &out, &errOut)
		t.Logf("voiceai %v: exit %d\n%s%s", args, code, out.String(), errOut.String()) // shown when the test fails
		return code, out.String(), errOut.String()
	}
	junitFailures := func(path string, wantTests int) int {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Cases    []struct {
				Failure *struct{} `xml:"failure"`
			} `xml:"testsuite>testcase"`
		}
		if err := xml.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s is not XML: %v\n%s", path, err, b)
		}
		failed := 0
		for _, c := range doc.Cases {
			if c.Failure != nil {
				failed++
			}
		}
		if doc.Tests != wantTests || len(doc.Cases) != wantTests || failed != doc.Failures {
			t.Fatalf("JUnit: tests=%d cases=%d failures=%d (counted %d), want %d tests\n%s", doc.Tests, len(doc.Cases), doc.Failures, failed, wantTests, b)
		}
		return doc.Failures
	}
	dir := t.TempDir()

	agent := agentWith(t, s)
	hours := createTest(t, s, hoursTest)
	// Without --test the CLI runs what the listing shows: wait for it.
	eventually(t, 10*time.Second, "the test is listed", func() bool {
		return strings.Contains(string(call(t, s, "GET", "/v1/convai/agent-testing", adminKey, "").Body), hours)
	})

	// Every test of the workspace (one, passing): exit 0.
	passJUnit := filepath.Join(dir, "pass.xml")
	code, out, errOut := voiceai(adminKey, "tests", "run", "--agent", agent, "--wait", "--poll", "20ms", "--junit", passJUnit)
	if code != cli.ExitOK || !strings.Contains(out, "1 passed, 0 failed of 1 run(s)") {
		t.Fatalf("all pass: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "1/1 runs finished (1 passed, 0 failed)") {
		t.Fatalf("no progress lines: %s", errOut)
	}
	if f := junitFailures(passJUnit, 1); f != 0 {
		t.Fatalf("all pass: %d failures in JUnit", f)
	}

	// A failing test among the named ones: exit 1, one failure in JUnit.
	refund := createTest(t, s, refundPromiseTest)
	failJUnit := filepath.Join(dir, "fail.xml")
	code, out, errOut = voiceai(adminKey, "tests", "run", "--agent", agent, "--test", hours, "--test", refund, "--wait", "--poll", "20ms", "--junit", failJUnit)
	if code != cli.ExitFailed || !strings.Contains(out, "1 passed, 1 failed of 2 run(s)") || !strings.Contains(out, refund) {
		t.Fatalf("a failure: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if f := junitFailures(failJUnit, 2); f != 1 {
		t.Fatalf("a failure: %d failures in JUnit", f)
	}

	// Repeated alike, its failures are one line with their count, and a
	// reason the table cuts is printed in full below it.
	code, out, errOut = voiceai(adminKey, "tests", "run", "--agent", agent, "--test", refund, "--repeat", "3", "--wait", "--poll", "20ms")
	if code != cli.ExitFailed || strings.Count(out, refund) != 1 || !regexp.MustCompile(`FAILED\s+3\s+`+refund).MatchString(out) ||
		!strings.Contains(out, "0 passed, 3 failed of 3 run(s)") {
		t.Fatalf("repeated failures: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if reason := regexp.MustCompile(`(?m)^\[1\] (.+)$`).FindStringSubmatch(out); strings.Contains(out, "…") && (reason == nil || len(reason[1]) <= 100) {
		t.Fatalf("a cut reason is not shown in full:\n%s", out)
	}
	// A past invocation reads the same.
	inv := regexp.MustCompile(`invocation (tinv_[A-Za-z0-9_-]+)`).FindStringSubmatch(out)
	if inv == nil {
		t.Fatalf("no invocation id in:\n%s", out)
	}
	if code, shown, errOut := voiceai(adminKey, "tests", "invocation", inv[1]); code != cli.ExitOK ||
		!regexp.MustCompile(`FAILED\s+3\s+`+refund).MatchString(shown) || !strings.Contains(shown, "0 passed, 3 failed of 3 run(s); invocation "+inv[1]) {
		t.Fatalf("tests invocation: exit %d\nstdout %s\nstderr %s", code, shown, errOut)
	}
	// Both end with the agent's latency, as the invocation's JSON has it.
	var lat struct {
		AgentLatency wire.AgentLatency `json:"agent_latency"`
	}
	if r := call(t, s, "GET", "/v1/convai/test-invocations/"+inv[1], adminKey, ""); r.Code != 200 || json.Unmarshal(r.Body, &lat) != nil {
		t.Fatalf("invocation: %d %s", r.Code, r.Body)
	}
	l := lat.AgentLatency
	if l.Turns < 3 || l.P50Ms == nil || l.FirstTokenP50Ms == nil {
		t.Fatalf("no latency recorded: %+v", l)
	}
	wantLatency := fmt.Sprintf("Agent latency over %d turn(s): first token p50 %d ms, p95 %d ms, max %d ms; whole turn p50 %d ms, p95 %d ms, max %d ms\n",
		l.Turns, *l.FirstTokenP50Ms, *l.FirstTokenP95Ms, *l.FirstTokenMaxMs, *l.P50Ms, *l.P95Ms, *l.MaxMs)
	_, shown, _ := voiceai(adminKey, "tests", "invocation", inv[1])
	if !strings.HasSuffix(out, wantLatency) || !strings.HasSuffix(shown, wantLatency) {
		t.Fatalf("the totals do not end with %q:\ntests run --wait:\n%s\ntests invocation:\n%s", wantLatency, out, shown)
	}

	// Errors: exit 2 with the server's message.
	code, _, errOut = voiceai("vak_not_a_key", "tests", "run", "--agent", agent, "--test", hours, "--wait")
	if code != cli.ExitError || !strings.Contains(errOut, "invalid_api_key") || !strings.Contains(errOut, "The API key is not valid.") {
		t.Fatalf("bad key: exit %d, stderr %s", code, errOut)
	}
	code, _, errOut = voiceai(adminKey, "tests", "run", "--agent", "agent_nope", "--test", hours, "--wait")
	if code != cli.ExitError || !strings.Contains(errOut, "agent_not_found") {
		t.Fatalf("unknown agent: exit %d, stderr %s", code, errOut)
	}

	// Definitions kept in a repository: export, edit, apply (update), and
	// apply without an id (create).
	exported := filepath.Join(dir, "agent.yaml")
	code, out, errOut = voiceai(adminKey, "agents", "export", agent)
	if code != cli.ExitOK || !strings.Contains(out, "agent_id: "+agent) || !strings.Contains(out, "first_message:") {
		t.Fatalf("agents export: exit %d\n%s\n%s", code, out, errOut)
	}
	if err := os.WriteFile(exported, []byte(strings.Replace(out, "name: Bookings", "name: Bookings v2", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := voiceai(adminKey, "agents", "apply", "-f", exported); code != cli.ExitOK || !strings.Contains(out, "updated agent "+agent) {
		t.Fatalf("agents apply: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := call(t, s, "GET", "/v1/convai/agents/"+agent, adminKey, "").JSON(t); got["name"] != "Bookings v2" ||
		!strings.Contains(fmt.Sprint(got["conversation_config"]), "nine to five") {
		t.Fatalf("the applied agent: %v", got)
	}
	code, out, _ = voiceai(adminKey, "tests", "export", hours, "--format", "json")
	var testDef map[string]any
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &testDef) != nil || testDef["id"] != hours || testDef["reliability"] != nil {
		t.Fatalf("tests export: exit %d\n%s", code, out)
	}
	delete(testDef, "id")
	testDef["name"] = "Opening hours 😀, from the repository/tests"
	testDef["latency_budget"] = map[string]any{"first_token_p95_ms": 800} // an extension, kept both ways
	b, _ := json.Marshal(testDef)
	// Written as other tools write JSON (Python's json.dump, PHP's
	// json_encode): an emoji as a surrogate pair, a slash escaped; JSON,
	// though no YAML.
	b = bytes.Replace(bytes.Replace(b, []byte("😀"), []byte(`\ud83d\ude00`), 1), []byte("repository/tests"), []byte(`repository\/tests`), 1)
	testFile := filepath.Join(dir, "test.json")
	if err := os.WriteFile(testFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = voiceai(adminKey, "tests", "apply", "-f", testFile, "--json")
	var created struct{ ID string }
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &created) != nil || created.ID == "" {
		t.Fatalf("tests apply --json (create): exit %d\n%s\n%s", code, out, errOut)
	}
	if got := call(t, s, "GET", "/v1/convai/agent-testing/"+created.ID, adminKey, "").JSON(t); got["name"] != "Opening hours 😀, from the repository/tests" ||
		got["success_condition"] != testDef["success_condition"] || fmt.Sprint(got["latency_budget"]) != "map[first_token_p95_ms:800]" {
		t.Fatalf("the created test: %v", got)
	}
	if code, out, errOut := voiceai(adminKey, "tests", "export", created.ID); code != cli.ExitOK ||
		!regexp.MustCompile(`(?m)^latency_budget:\n\s+first_token_p95_ms: 800$`).MatchString(out) {
		t.Fatalf("tests export of the applied test: exit %d\n%s\n%s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("- a list\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := voiceai(adminKey, "tests", "apply", "-f", filepath.Join(dir, "bad.yaml")); code != cli.ExitError || !strings.Contains(errOut, "not an object") {
		t.Fatalf("a list for a test: exit %d\n%s", code, errOut)
	}

	// The read commands show what the API holds.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"agents", "list"}, agent},
		{[]string{"agents", "show", agent}, "Bookings"},
		{[]string{"tests", "list"}, "Refund promise"},
		{[]string{"tests", "show", hours}, "2 of 2 recent runs passed"},
		{[]string{"tests", "show", hours}, "(2 agent turns)"}, // its latency over them
		{[]string{"tests", "show", hours}, "FIRST TOKEN P95"}, // and in each of its two invocations
		{[]string{"keys", "list", "--json"}, `"service-accounts"`},
		{[]string{"members", "list"}, "SERVICE ACCOUNT"},
		{[]string{"tickets", "list"}, "ASSIGNEE"},
		{[]string{"webhooks", "list"}, "EVENTS"},
	} {
		if code, out, errOut := voiceai(adminKey, c.args...); code != cli.ExitOK || !strings.Contains(out, c.want) {
			t.Fatalf("%v: exit %d, want %q in\n%s\nstderr %s", c.args, code, c.want, out, errOut)
		}
	}

	// A recorded conversation, listed and shown with its transcript.
	ingest(t, s, adminKey, "conversation_ended", time.Now(), map[string]any{"conversation_id": "conv_cli", "agent_id": agent,
		"call_successful": "failure", "transcript": []map[string]any{{"role": "user", "message": "Are you open on Sunday?", "time_in_call_secs": 0},
			{"role": "agent", "message": "We never open.", "time_in_call_secs": 2}}})
	eventually(t, 10*time.Second, "voiceai conversations show prints the transcript", func() bool {
		code, out, _ := voiceai(adminKey, "conversations", "show", "conv_cli")
		return code == cli.ExitOK && strings.Contains(out, "We never open.") && strings.Contains(out, "Transcript (2 turns)")
	})
	if code, out, errOut := voiceai(adminKey, "conversations", "list", "--outcome", "failure", "--since", "1h"); code != cli.ExitOK ||
		!regexp.MustCompile(`conv_cli\s+`+agent+`.*\s2\s+done\s+failure`).MatchString(out) {
		t.Fatalf("conversations list: exit %d\n%s\n%s", code, out, errOut)
	}

	// The write commands, through the real services.
	var key struct {
		Secret string `json:"xi-api-key"`
		KeyID  string `json:"key_id"`
	}
	code, out, errOut = voiceai(adminKey, "keys", "create", "--account", "sa_admin", "--name", "ci", "--permissions", "convai_read", "--json")
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &key) != nil || key.Secret == "" {
		t.Fatalf("keys create: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := voiceai(key.Secret, "agents", "list"); code != cli.ExitOK {
		t.Fatalf("the new key: exit %d, %s", code, errOut)
	}
	if code, out, errOut := voiceai(adminKey, "keys", "revoke", key.KeyID); code != cli.ExitOK || !strings.Contains(out, "Revoked key "+key.KeyID) {
		t.Fatalf("keys revoke: exit %d\n%s\n%s", code, out, errOut)
	}
	eventually(t, 5*time.Second, "the revoked key is refused", func() bool {
		code, _, errOut := voiceai(key.Secret, "agents", "list")
		return code == cli.ExitError && strings.Contains(errOut, "api_key_revoked")
	})

	tk := decodeTicket(t, call(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", adminKey, `{"title":"Wrong hours","qa_comment":"x"}`))
	eventually(t, 5*time.Second, "the ticket is assigned", func() bool {
		code, out, _ := voiceai(adminKey, "tickets", "assign", tk.AgentqaTicketID, "sa_admin")
		return code == cli.ExitOK && strings.Contains(out, "assigned to sa_admin")
	})
	if code, out, errOut := voiceai(adminKey, "tickets", "show", tk.AgentqaTicketID); code != cli.ExitOK || !strings.Contains(out, "Wrong hours") || !strings.Contains(out, "sa_admin") {
		t.Fatalf("tickets show: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := voiceai(adminKey, "tickets", "assign", tk.AgentqaTicketID, "none"); code != cli.ExitOK || !strings.Contains(out, "unassigned") {
		t.Fatalf("tickets unassign: exit %d\n%s\n%s", code, out, errOut)
	}

	var hook struct {
		ID     string `json:"webhook_id"`
		Secret string `json:"secret"`
	}
	code, out, errOut = voiceai(adminKey, "webhooks", "create", "--url", "http://127.0.0.1:1/hook", "--event", "call_ended", "--json")
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &hook) != nil || hook.ID == "" || hook.Secret == "" {
		t.Fatalf("webhooks create: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := voiceai(adminKey, "webhooks", "list"); code != cli.ExitOK || !strings.Contains(out, hook.ID) {
		t.Fatalf("webhooks list: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := voiceai(adminKey, "webhooks", "logs", hook.ID); code != cli.ExitOK || !strings.Contains(out, "RETRIES") {
		t.Fatalf("webhooks logs: exit %d\n%s\n%s", code, out, errOut)
	}
}
