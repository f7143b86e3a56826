package api

import (
	"encoding/json"
	"fmt"
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestExamples checks examples.yaml: every operation with a request body
// or an answer schema has an example of it, each example is valid against
// its schema (with the validator the request path uses), request examples
// keep the rules their schema's description adds where they are cheap to
// check, and the document carries them.
func TestExamples(t *testing.T) {
	exs, err := examples()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, op := range Operations {
		known[op.Name] = true
		ex := exs[op.Name]
		check := func(what, schema string, v any) {
			t.Helper()
			switch {
			case schema == "" && v != nil:
				t.Errorf("%s: a %s example, but the operation has no %s schema", op.Name, what, what)
			case schema != "" && v == nil:
				t.Errorf("%s: no %s example (schema %s)", op.Name, what, schema)
			case schema != "":
				if err := checkExample(schema, v); err != nil {
					t.Errorf("%s: the %s example does not match %s: %v", op.Name, what, schema, err)
				}
			}
		}
		check("request", op.Request, ex.Request)
		check("response", op.Response, ex.Response)
		if ex.Request != nil {
			for _, err := range requestRules(op.Request, ex.Request.(map[string]any)) {
				t.Errorf("%s: the request example: %v", op.Name, err)
			}
		}
	}
	for name := range exs {
		if !known[name] {
			t.Errorf("examples.yaml names %s, which is no operation", name)
		}
	}

	// The document carries them: the request body's and the usual answer's.
	b, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	type content = map[string]struct{ Example any }
	for _, op := range Operations {
		var o struct {
			RequestBody struct{ Content content }
			Responses   map[string]struct{ Content content }
		}
		if err := json.Unmarshal(doc.Paths[op.Path][strings.ToLower(op.Method)], &o); err != nil {
			t.Fatal(op.Name, err)
		}
		if op.Request != "" && o.RequestBody.Content["application/json"].Example == nil {
			t.Errorf("%s: the document's request body has no example", op.Name)
		}
		if op.Response != "" && o.Responses[fmt.Sprint(op.Success[0])].Content["application/json"].Example == nil {
			t.Errorf("%s: the document's %d answer has no example", op.Name, op.Success[0])
		}
	}
}

// TestExamplesFailWhenBroken: an example that breaks its schema is caught.
func TestExamplesFailWhenBroken(t *testing.T) {
	exs, err := examples()
	if err != nil {
		t.Fatal(err)
	}
	ticket := map[string]any{}
	for k, v := range exs[GetTicket.Name].Response.(map[string]any) {
		ticket[k] = v
	}
	ticket["status"] = "closed" // not a ticket status
	if err := checkExample("Ticket", ticket); err == nil {
		t.Error("a ticket with status closed passes")
	}
	delete(ticket, "status")
	ticket["title"] = 42
	if err := checkExample("Ticket", ticket); err == nil {
		t.Error("a ticket without status and a number for a title passes")
	}
	if errs := requestRules("TestCreate", map[string]any{"name": "Refunds", "type": "llm"}); len(errs) == 0 {
		t.Error("an llm test without a success condition or examples passes")
	}
}

// checkExample checks v, an example, against the schema called name, and
// what every example keeps beside it.
func checkExample(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := CheckJSON(name, b); err != nil {
		return err
	}
	return checkValues(v, "")
}

var idPattern = regexp.MustCompile(IDPattern)

// checkValues: an example holds no placeholder ("string", "…" alone; a
// JSON Schema's type may be "string"), and every id it names (a field
// ending in _id or _ids) follows the id grammar.
func checkValues(v any, key string) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if err := checkValues(e, k); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	case []any:
		for i, e := range x {
			if err := checkValues(e, key); err != nil {
				return fmt.Errorf("%d: %w", i, err)
			}
		}
	case string:
		switch {
		case (x == "string" && key != "type") || x == "…" || x == "...":
			return fmt.Errorf("a placeholder, %q", x)
		case x != "" && (strings.HasSuffix(key, "_id") || strings.HasSuffix(key, "_ids")) && !idPattern.MatchString(x):
			return fmt.Errorf("%q is not an id", x)
		}
	}
	return nil
}

// examplesNow is when the examples happen (Unix seconds): their
// timestamps are around it.
const examplesNow = 1795000000

// requestRules are the rules the description of the request schema
// called name adds to it, those cheap to check, broken by body.
func requestRules(name string, body map[string]any) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	has := func(k string) bool {
		switch v := body[k].(type) {
		case nil:
			return false
		case string:
			return strings.TrimSpace(v) != ""
		case []any:
			return len(v) > 0
		}
		return true
	}
	switch name {
	case "TestCreate":
		switch body["type"] {
		case "llm":
			if !has("success_condition") && !has("success_examples") && !has("failure_examples") {
				fail("an llm test needs a success_condition or examples")
			}
		case "simulation":
			if !has("success_condition") && !has("success_conditions") {
				fail("a simulation needs a success_condition or success_conditions")
			}
		case "tool":
			if !has("tool_call_parameters") {
				fail("a tool test needs its tool_call_parameters")
			}
		}
	case "TestFromConversation":
		i, _ := body["turn_index"].(int)
		if turns, ok := body["transcript"].([]any); ok {
			if i >= len(turns) || turns[i].(map[string]any)["role"] != "agent" {
				fail("turn_index %d is not an agent turn of the transcript", i)
			}
		}
		if i > 500 {
			fail("turn_index %d is above 500", i)
		}
	case "TicketCreate":
		if !has("qa_comment") && !has("turn_comments") {
			fail("a report gives qa_comment, turn_comments or both")
		}
	case "WebhookCreate", "WebhookUpdate":
		if relay, _ := body["relay"].(bool); name == "WebhookCreate" && !relay && !has("url") {
			fail("a webhook that is not a relay needs a url")
		}
		if s, ok := body["url"].(string); ok {
			if u, err := url.Parse(s); err != nil || u.Scheme != "https" || u.Host == "" {
				fail("url %q is not an absolute https URL", s)
			}
		}
	case "Recover":
		if end, ok := body["end_time"].(int); ok && end <= body["start_time"].(int) {
			fail("end_time is not after start_time")
		}
	case "EventIngest":
		if s, ok := body["timestamp"].(string); ok {
			if _, err := time.Parse(time.RFC3339, s); err != nil {
				fail("timestamp: %v", err)
			}
		}
	case "ApiKeyCreate":
		if at, ok := body["expires_at_unix"].(int); ok && (at <= examplesNow || at > examplesNow+10*366*24*3600) {
			fail("expires_at_unix %d is not in the future and at most 10 years away", at)
		}
	case "MemberInvite":
		if _, err := mail.ParseAddress(body["email"].(string)); err != nil {
			fail("email: %v", err)
		}
	case "RunTests", "Resubmit":
		if b, ok := body["branch_id"].(string); ok && b != "" && b != "main" {
			fail("branch_id %q: an agent has one branch, main", b)
		}
	}
	return errs
}
