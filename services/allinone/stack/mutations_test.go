package stack

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/api"
)

// Every operation's documented request example, with each of its fields
// in turn left out, set to null, or given a value of another type or at
// the edge of what any field takes, is answered as the document says
// (call checks every answer against it, and that a request it refuses
// never succeeds): never a 5xx. The examples reach past the edge's check
// into each handler and use case, where a body the schema lets through
// meets the rules of the service.
func TestMutatedExamplesAreAnsweredAsDocumented(t *testing.T) {
	t.Parallel()
	s := startHostile(t)
	agentID := newAgent(t, s, adminKey, "Target")
	ids := realIDs(t, s, agentID)
	examples := requestExamples(t)
	tried := 0
	for _, op := range api.Operations {
		example, ok := examples[op.Method+" "+op.Path]
		if !ok {
			continue
		}
		path := pathVar.ReplaceAllStringFunc(op.Path, func(v string) string {
			if id, ok := ids[v]; ok {
				return id
			}
			return "id_well_formed"
		})
		for _, body := range mutationsOf(example) {
			tried++
			r := call(t, s, op.Method, path, adminKey, body)
			if r.Code >= 500 {
				t.Errorf("%s %s (%s) with %.300s: %d %.300s", op.Method, op.Path, op.Name, body, r.Code, r.Body)
			}
		}
		stillServes(t, s, agentID, op.Name)
	}
	if tried == 0 {
		t.Fatal("the document has no request examples")
	}
	t.Logf("%d mutated bodies", tried)
}

// realIDs are resources of the stack's workspace for the path's
// variables, so that a body reaches its use case, not a 404.
func realIDs(t *testing.T, s *Stack, agentID string) map[string]string {
	t.Helper()
	conv := "conv_mutations"
	publishConversation(t, s, "ws_default", "conversation_started", conv, agentID, time.Now().Add(-time.Minute))
	publishConversation(t, s, "ws_default", "conversation_ended", conv, agentID, time.Now())
	created := func(method, path, body, field string) string {
		t.Helper()
		r := call(t, s, method, path, adminKey, body)
		id, _ := r.JSON(t)[field].(string)
		if r.Code >= 300 || id == "" {
			t.Fatalf("%s %s: %d %s", method, path, r.Code, r.Body)
		}
		return id
	}
	return map[string]string{
		"{agent_id}":        agentID,
		"{conversation_id}": conv,
		"{ticket_id}": created("POST", "/v1/convai/agents/"+agentID+"/triage-tickets", `{"title":"Wrong refund window","qa_comment":"Quoted 48 hours"}`,
			"agentqa_ticket_id"),
		"{webhook_id}": created("POST", "/v1/convai/webhooks", `{"name":"w","url":"https://example.com/hook","events":["call_started"]}`, "webhook_id"),
		"{test_id}":    createTest(t, s, hoursTest),
	}
}

// requestExamples are the request examples of the served OpenAPI
// document, by method and path template.
func requestExamples(t *testing.T) map[string]any {
	t.Helper()
	b, err := api.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for path, methods := range doc.Paths {
		for method, raw := range methods {
			var o struct {
				RequestBody struct {
					Content map[string]struct {
						Example any `json:"example"`
					} `json:"content"`
				} `json:"requestBody"`
			}
			if method == "parameters" || json.Unmarshal(raw, &o) != nil {
				continue // the path's own parameters, not an operation
			}
			if ex := o.RequestBody.Content["application/json"].Example; ex != nil {
				out[strings.ToUpper(method)+" "+path] = ex
			}
		}
	}
	return out
}

// oddValues stand in for a field's value: each type JSON has, and values
// at the edges of what fields take.
var oddValues = []any{
	nil, true, 0, -1, 1e300, 9007199254740993, 0.5, "", " ", strings.Repeat("x", 10_000), "\u202e\u0000", "2026-13-45T99:99:99Z",
	[]any{}, []any{nil}, []any{""}, map[string]any{}, map[string]any{"": nil},
}

// mutationsOf are example's bodies with one change each: every field (at
// any depth) left out and given each odd value, every array emptied and
// grown to many copies of its first element.
func mutationsOf(example any) []string {
	var out []string
	add := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("a mutation does not marshal: %v", err))
		}
		out = append(out, string(b))
	}
	var walk func(at []any)
	walk = func(at []any) {
		v := get(example, at)
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				add(set(example, append(slices.Clone(at), k), deleted{}))
				walk(append(slices.Clone(at), k))
			}
		case []any:
			add(set(example, at, []any{}))
			if len(v) > 0 {
				many := make([]any, 200)
				for i := range many {
					many[i] = v[0]
				}
				add(set(example, at, many))
				walk(append(slices.Clone(at), 0))
			}
		}
		if len(at) > 0 {
			for _, odd := range oddValues {
				add(set(example, at, odd))
			}
		}
	}
	walk(nil)
	return out
}

// deleted, as the value set, leaves the field out.
type deleted struct{}

func get(v any, at []any) any {
	for _, step := range at {
		switch s := step.(type) {
		case string:
			v = v.(map[string]any)[s]
		case int:
			v = v.([]any)[s]
		}
	}
	return v
}

// set is a deep copy of v with the value at path at replaced by to.
func set(v any, at []any, to any) any {
	if len(at) == 0 {
		return to
	}
	switch c := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(c))
		for k, x := range c {
			m[k] = x
		}
		k := at[0].(string)
		if _, gone := to.(deleted); gone && len(at) == 1 {
			delete(m, k)
			return m
		}
		m[k] = set(c[k], at[1:], to)
		return m
	case []any:
		l := slices.Clone(c)
		i := at[0].(int)
		l[i] = set(c[i], at[1:], to)
		return l
	}
	return v
}
