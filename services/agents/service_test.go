package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/projection"
	"github.com/voiceai-platform/voiceai/pkg/runtime"
	"github.com/voiceai-platform/voiceai/pkg/runtime/runtimetest"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/agents/adapters"
	"github.com/voiceai-platform/voiceai/services/agents/domain"
)

type fixture struct {
	svc *Service
	js  jetstream.JetStream
	db  *mongo.Database
}

// testConfig lets the agents' model endpoints be a local test server.
var testConfig = Config{Secret: "test-secret", AllowHosts: []string{"127.0.0.1"}}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	env := testenv.New(t)
	mc := env.Mongo(t)
	d := runtimetest.Deps(t, env.Conn(t), mc)
	svc, stop := runtimetest.Start(t, func(ctx context.Context) (*Service, error) { return Start(ctx, d, testConfig) })
	t.Cleanup(stop)
	return &fixture{svc: svc, js: d.JS, db: mc.Database(runtime.DatabaseName(Name))}
}

var caller = principal.Principal{WorkspaceID: "ws_a", UserID: "sa_1", Permissions: []string{"convai_read", "convai_write"}}

func (f *fixture) do(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	return f.doAs(t, caller, method, path, body)
}

// createAgent creates an agent from body and returns its id.
func (f *fixture) createAgent(t *testing.T, body string) string {
	t.Helper()
	code, created := f.do(t, http.MethodPost, "/v1/convai/agents/create", body)
	if code != 201 {
		t.Fatalf("create: %d %v", code, created)
	}
	return created["agent_id"].(string)
}

func (f *fixture) doAs(t *testing.T, p principal.Principal, method, path, body string) (int, map[string]any) {
	t.Helper()
	return runtimetest.Serve(f.svc.Handler, p, method, path, body)
}

// Concurrent changes of one agent are serialised by optimistic
// concurrency: each retries against fresh state, and none is lost.
func TestConcurrentPatchesAllLand(t *testing.T) {
	f := newFixture(t)
	id := f.createAgent(t, `{"name":"a"}`)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"platform_settings":{"k%d":true}}`, i)
			if code, m := f.do(t, http.MethodPatch, "/v1/convai/agents/"+id, body); code != 200 {
				t.Errorf("patch %d: %d %v", i, code, m)
			}
		}()
	}
	wg.Wait()
	_, got := f.do(t, http.MethodGet, "/v1/convai/agents/"+id, "")
	settings := got["platform_settings"].(map[string]any)
	for i := range 4 {
		if settings[fmt.Sprintf("k%d", i)] != true {
			t.Fatalf("a concurrent change was lost: %v", settings)
		}
	}
}

// The read model is rebuilt from the stream alone into a fresh collection
// and equals the live one; replaying a record changes nothing.
func TestReadModelRebuildsFromTheStream(t *testing.T) {
	f := newFixture(t)
	var ids []string
	for i := range 6 {
		_, m := f.do(t, http.MethodPost, "/v1/convai/agents/create", fmt.Sprintf(`{"name":"agent %d","tags":["t%d"]}`, i, i%2))
		ids = append(ids, m["agent_id"].(string))
	}
	f.do(t, http.MethodPatch, "/v1/convai/agents/"+ids[1], `{"name":"renamed"}`)
	f.do(t, http.MethodDelete, "/v1/convai/agents/"+ids[2], "")

	ctx := context.Background()
	if err := projection.WaitCaughtUp(ctx, f.js, events.AgentsStream, "agents-readmodel"); err != nil {
		t.Fatal(err)
	}
	rebuilt := f.db.Collection("agents_rebuilt")
	n, err := projection.Rebuild(ctx, f.js, events.AgentsStream, []string{events.AgentsAll}, rebuilt, adapters.Handler)
	if err != nil || n != 8 {
		t.Fatalf("rebuild applied %d events, want 8: %v", n, err)
	}
	live := dump(t, f.db.Collection(adapters.AgentsCollection))
	if got := dump(t, rebuilt); got != live {
		t.Fatalf("rebuilt read model differs:\n got %s\nwant %s", got, live)
	}
	if !strings.Contains(live, `"deleted":true`) {
		t.Fatal("a deleted agent must stay as a tombstone so reordering converges")
	}
	// Listing reads the same from either.
	_, page := f.do(t, http.MethodGet, "/v1/convai/agents?page_size=100", "")
	if n := len(page["agents"].([]any)); n != 5 {
		t.Fatalf("listed %d agents, want 5", n)
	}
}

func dump(t *testing.T, c *mongo.Collection) string {
	t.Helper()
	cur, err := c.Find(context.Background(), bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(docs)
	return string(b)
}

// Every malformed agent body is refused at the edge with a 422 that
// locates the field, on create and on update alike, and nothing is written.
func TestBadAgentBodiesAreRefusedWhereTheyAreWrong(t *testing.T) {
	f := newFixture(t)
	id := f.createAgent(t, `{"name":"a"}`)
	long := func(n int) string { return strings.Repeat("é", n) }
	for _, c := range []struct{ body, loc, typ string }{
		{`{"name":""}`, "name", "string_too_short"},
		{`{"name":"   "}`, "name", "string_too_short"},
		{`{"name":"` + long(257) + `"}`, "name", "string_too_long"},
		{`{"name":7}`, "name", "string_type"},
		{`{"agent_type":"robot"}`, "agent_type", "enum"},
		{`{"tags":["a",""]}`, "tags.1", "string_too_short"},
		{`{"tags":["a"," "]}`, "tags.1", "string_too_short"},
		{`{"tags":["` + long(65) + `"]}`, "tags.0", "string_too_long"},
		{`{"tags":[` + strings.Repeat(`"t",`, 50) + `"t"]}`, "tags", "too_long"},
		{`{"system_prompt":"` + long(200_001) + `"}`, "system_prompt", "string_too_long"},
		{`{"conversation_config":"s"}`, "conversation_config", "model_type"},
		{`{"platform_settings":[1]}`, "platform_settings", "model_type"},
		{`{"conversation_config":{"tts":{"voice_id":"` + long(200_001) + `"}}}`, "conversation_config.tts.voice_id", "string_too_long"},
		{`{"workflow":{"nodes":{"` + long(200_001) + `":{}}}}`, "workflow.nodes", "string_too_long"},
	} {
		for _, req := range []struct{ method, path string }{
			{http.MethodPost, "/v1/convai/agents/create"}, {http.MethodPatch, "/v1/convai/agents/" + id},
		} {
			code, m := f.do(t, req.method, req.path, c.body)
			if code != 422 || !hasError(m, "body."+c.loc, c.typ) {
				t.Errorf("%s %.60s: %d %.300v, want 422 at body.%s (%s)", req.method, c.body, code, m, c.loc, c.typ)
			}
		}
	}
	// A prompt given twice must agree.
	code, m := f.do(t, http.MethodPost, "/v1/convai/agents/create", `{"system_prompt":"a","conversation_config":{"agent":{"prompt":{"prompt":"b"}}}}`)
	if code != 422 || !hasError(m, "body.system_prompt", "value_error") {
		t.Errorf("contradicting prompts: %d %v", code, m)
	}
	_, page := f.do(t, http.MethodGet, "/v1/convai/agents", "")
	if agents := page["agents"].([]any); len(agents) != 1 {
		t.Errorf("refused creates wrote agents: %d listed", len(agents))
	}
	_, got := f.do(t, http.MethodGet, "/v1/convai/agents/"+id, "")
	if got["name"] != "a" {
		t.Errorf("a refused update changed the agent: %v", got["name"])
	}
}

// hasError reports whether a 422 body names the error at loc (dotted,
// list indexes as numbers) with type typ.
func hasError(body map[string]any, loc, typ string) bool {
	detail, _ := body["detail"].([]any)
	for _, d := range detail {
		e, _ := d.(map[string]any)
		parts := []string{}
		for _, p := range e["loc"].([]any) {
			parts = append(parts, fmt.Sprint(p))
		}
		if strings.Join(parts, ".") == loc && e["type"] == typ {
			return true
		}
	}
	return false
}

// The prompt's bound is said by the schema and, for the free-form
// configurations no schema reaches into, by the domain: they agree.
func TestSchemaAndDomainBoundThePromptAlike(t *testing.T) {
	s, err := api.Schema("AgentPrompt")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s["maxLength"]); got != fmt.Sprint(domain.MaxPromptLen) {
		t.Errorf("the schema bounds the prompt at %s characters, the domain at %d", got, domain.MaxPromptLen)
	}
}
