package api

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/api/contract"
	events "github.com/voiceai-platform/voiceai/proto-events"
)

// TestOpenAPIDocumentIsValid checks the document against the OpenAPI 3.1
// schema, and that it documents every operation and uses every schema.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	b, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := contract.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(); err != nil {
		t.Error(err)
	}

	var m struct {
		Paths      map[string]map[string]json.RawMessage
		Components struct{ Schemas, Parameters map[string]json.RawMessage }
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, op := range Operations {
		if m.Paths[op.Path][strings.ToLower(op.Method)] == nil {
			t.Errorf("%s %s (%s) is not documented", op.Method, op.Path, op.Name)
		}
	}
	for name := range m.Components.Schemas {
		if !strings.Contains(string(b), `"#/components/schemas/`+name+`"`) {
			t.Errorf("schema %s is used by nothing", name)
		}
	}
	for name := range m.Components.Parameters {
		if !slices.ContainsFunc(Operations, func(op Operation) bool { return slices.Contains(op.Query, name) }) {
			t.Errorf("parameter %s is used by nothing", name)
		}
	}
}

// TestSchemaStandsAlone: a resolved schema has no references left and
// keeps what they named.
func TestSchemaStandsAlone(t *testing.T) {
	s, err := Schema("TicketEventData")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s)
	if strings.Contains(string(b), "$ref") || !strings.Contains(string(b), `"agentqa_ticket_id"`) || !strings.Contains(string(b), `"in_progress"`) {
		t.Fatalf("resolved schema: %s", b)
	}
	// Keywords beside a reference are kept, and the reference still holds.
	role := mustSchema(t, "MemberInvite")["properties"].(map[string]any)["seat_type"].(map[string]any)
	if role["default"] != "workspace_member" || !strings.Contains(fmt.Sprint(role["allOf"]), "workspace_admin") {
		t.Fatalf("a reference with a default beside it resolved to %v", role)
	}
	if _, err := Schema("Nope"); err == nil {
		t.Fatal("an unknown schema resolved")
	}
}

func mustSchema(t *testing.T, name string) map[string]any {
	t.Helper()
	s, err := Schema(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAsyncAPIDocument: every event type has a message on its stream's
// channel, and every reference in the document resolves.
func TestAsyncAPIDocument(t *testing.T) {
	b, err := AsyncAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	messages := doc["components"].(map[string]any)["messages"].(map[string]any)
	for _, typ := range events.Types() {
		stream, _ := events.StreamOf(typ)
		ch, _ := doc["channels"].(map[string]any)[stream].(map[string]any)
		if messages[typ] == nil || ch == nil || ch["messages"].(map[string]any)[typ] == nil {
			t.Errorf("event type %s has no message on channel %s", typ, stream)
		}
	}
	// TESTRUNS also holds records that are not events: a subscriber of
	// testruns.> meets them, so the document names them.
	testruns, _ := doc["channels"].(map[string]any)[events.TestRunsStream].(map[string]any)
	for _, name := range []string{"TestRunsQueued", "TestRunsCompleting"} {
		if testruns == nil || testruns["messages"].(map[string]any)[name] == nil {
			t.Errorf("channel %s has no message %s", events.TestRunsStream, name)
		}
	}
	for _, ref := range regexp.MustCompile(`"\$ref": "#/([^"]+)"`).FindAllStringSubmatch(string(b), -1) {
		var node any = doc
		for _, part := range strings.Split(ref[1], "/") {
			m, _ := node.(map[string]any)
			node = m[part]
		}
		if node == nil {
			t.Errorf("reference #/%s resolves to nothing", ref[1])
		}
	}
}
