package modelclient

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/pkg/outbound"
	"github.com/voiceai-platform/voiceai/services/testing/model"
	"github.com/voiceai-platform/voiceai/services/testing/offline"
)

// platformOnly is the platform's model, recognisable.
type platformOnly struct{ offline.Model }

func (platformOnly) ModelName() string { return "platform" }

func endpoints() *Endpoints {
	return &Endpoints{Platform: PlatformAgents{Default: platformOnly{}}, Guard: outbound.NewGuard([]string{"127.0.0.1"}),
		EnvVars: map[string]bool{"TEAM_KEY": true}}
}

// Only llm custom-llm hands the agent to its endpoint; a custom_llm block
// under another llm is not used.
func TestEndpointsPickTheAgentsModel(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Fixed(0, "from the endpoint"))
	defer srv.Close()
	e := endpoints()
	block := `"custom_llm":{"url":"` + srv.URL + `","model_id":"team"}`
	cases := map[string]string{
		`{"agent":{"prompt":{"llm":"gpt-4o",` + block + `}}}`:     "platform",
		`{"agent":{"prompt":{"llm":"custom-llm",` + block + `}}}`: "team",
		`{"agent":{"prompt":{"prompt":"p"}}}`:                     "platform",
	}
	for config, want := range cases {
		m, err := e.For(context.Background(), "ws_1", model.ParseAgentConfig([]byte(config)), nil)
		if err != nil || m.ModelName() != want {
			t.Errorf("%s: %v %v, want %s", config, m, err, want)
		}
	}
}

// What an endpoint cannot be given fails the run with the reason.
func TestEndpointsRefuseWhatTheyCannotResolve(t *testing.T) {
	e := endpoints()
	t.Setenv("TEAM_KEY", "from-env")
	t.Setenv("OTHER_KEY", "secret")
	for config, want := range map[string]string{
		`{"agent":{"prompt":{"llm":"custom-llm"}}}`:                                                                                                "custom_llm is missing or invalid",
		`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{"url":"http://10.0.0.9/v1"}}}}`:                                                      "URL scheme should be 'https' (unless VOICEAI_OUTBOUND_ALLOW_HOSTS lists its host on the runners",
		`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{"url":"https://169.254.169.254/v1"}}}}`:                                              "cloud metadata address, which agent endpoints may not reach",
		`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{"url":"https://x.example","api_key":{"secret_id":"s"}}}}}`:                           "cannot open workspace secrets",
		`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{"url":"https://x.example","api_key":{"env_var_label":"OTHER_KEY"}}}}}`:               "OTHER_KEY is not one the operator allows",
		`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{"url":"https://x.example","request_headers":{"X-Call":{"variable_name":"nope"}}}}}}`: "dynamic variable nope has no value",
	} {
		_, err := e.For(context.Background(), "ws_1", model.ParseAgentConfig([]byte(config)), map[string]string{})
		if err == nil || !model.IsEndpointError(err) || !strings.HasPrefix(err.Error(), "agent endpoint not callable: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", config, err, want)
		}
	}
	m, err := e.For(context.Background(), "ws_1", model.ParseAgentConfig([]byte(
		`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{"url":"https://x.example","api_key":{"env_var_label":"TEAM_KEY"}}}}}`)), nil)
	if err != nil || m.Provider() != "custom-llm" {
		t.Fatalf("an allowed env var: %v %v", m, err)
	}
}

// A load test's calls share slots of their own on an endpoint, as many as
// its limit; a run's calls to the same endpoint keep the usual slots.
func TestAnEndpointLimitIsALoadTestsOwn(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Fixed(0, "hi"))
	defer srv.Close()
	e := endpoints()
	e.Concurrency = 2
	cfg := model.ParseAgentConfig([]byte(`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{"url":"` + srv.URL + `","model_id":"team"}}}}`))
	load := model.WithEndpointLimit(context.Background(), model.EndpointLimit{Scope: "tinv_1#1", N: 12})
	slots := func(ctx context.Context) int {
		t.Helper()
		m, err := e.For(ctx, "ws_1", cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cap(m.(*customAgent).ep.slots)
	}
	if got := slots(load); got != 12 {
		t.Fatalf("the load test's slots: %d, want 12", got)
	}
	if got := slots(context.Background()); got != 2 {
		t.Fatalf("a run's endpoint slots: %d, want the usual 2", got)
	}
}

// A run that waited for a slot of a busy endpoint asks its gate, before
// its first call, whether it is still wanted: dropped, it calls nothing.
// One that got a slot at once, or has called before, is not asked.
func TestARunQueuedOnABusyEndpointAsksItsGate(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Fixed(0, "hi"))
	defer srv.Close()
	e := endpoints()
	e.Concurrency = 1
	m, err := e.For(context.Background(), "ws_1", model.ParseAgentConfig([]byte(`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{"url":"`+srv.URL+`","model_id":"team"}}}}`)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ep := m.(*customAgent).ep
	conv := model.Conversation{SystemPrompt: "be brief"}
	respond := func(wanted bool, busy bool) (*model.Gate, error) {
		asked := false
		g := &model.Gate{Wanted: func() bool { asked = true; return wanted }}
		ctx := model.WithGate(context.Background(), g)
		if busy {
			ep.slots <- struct{}{} // another run holds the only slot, and lets it go once this one waits
			ctx = model.WithSlot(ctx, func() func() { <-ep.slots; return func() {} })
		}
		_, _, err := m.Respond(ctx, conv)
		if asked != busy {
			t.Errorf("asked %v with the endpoint busy %v", asked, busy)
		}
		return g, err
	}
	if g, err := respond(false, true); !errors.Is(err, model.ErrNotWanted) || !g.Dropped() || len(srv.Requests()) != 0 {
		t.Fatalf("a run no longer wanted: %v, dropped %v, %d calls", err, g.Dropped(), len(srv.Requests()))
	}
	if g, err := respond(true, true); err != nil || g.Dropped() || len(srv.Requests()) != 1 {
		t.Fatalf("a run still wanted: %v, %d calls", err, len(srv.Requests()))
	}
	if g, err := respond(false, false); err != nil || g.Dropped() || len(srv.Requests()) != 2 {
		t.Fatalf("a run that got a slot at once: %v, %d calls", err, len(srv.Requests()))
	}
}
