package modelclient

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/llm"
	"github.com/voiceai-platform/voiceai/pkg/llm/llmtest"
	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// Every form of a credential an endpoint is likely to echo is hidden; a
// value too short to be a secret is left alone, as is other text.
func TestRedactorHidesEveryEchoedForm(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("team:pa55word-long"))
	r := newRedactor(key, basic, "1234", `quo"te\secret`)
	for _, echoed := range []string{
		key, "Bearer " + key, base64.StdEncoding.EncodeToString([]byte(key)), base64.RawURLEncoding.EncodeToString([]byte(key)),
		basic, "team:pa55word-long", "pa55word-long", `quo\"te\\secret`, `quo"te\secret`,
	} {
		got := r.String("you sent <" + echoed + "> which is wrong")
		if strings.Contains(got, echoed) || !strings.Contains(got, RedactedSecret) || !strings.HasSuffix(got, "> which is wrong") {
			t.Errorf("%q: %q", echoed, got)
		}
	}
	if got := r.String("PIN 1234, order 42"); got != "PIN 1234, order 42" {
		t.Errorf("a value under %d characters was redacted: %q", MinRedacted, got)
	}
	var nilR *redactor
	if nilR.String("x") != "x" || nilR.Error(nil) != nil {
		t.Error("a nil redactor changes text")
	}
	turn := r.Turn(model.Turn{Role: "agent", Text: "key " + key, Calls: []model.Call{{ID: "c1", Name: "lookup", Arguments: `{"k":"` + key + `"}`}}})
	if strings.Contains(turn.Text, key) || strings.Contains(turn.Calls[0].Arguments, key) || turn.Calls[0].Name != "lookup" {
		t.Errorf("turn: %+v", turn)
	}
	err := r.Error(&model.EndpointError{Err: errors.Join(llm.ErrTimeout, errors.New("key "+key))})
	if strings.Contains(err.Error(), key) || !errors.Is(err, llm.ErrTimeout) {
		t.Errorf("error %q lost its key or its cause", err)
	}
	var ee *model.EndpointError
	if errors.As(err, &ee) {
		t.Error("errors.As reaches the unredacted error beneath")
	}
}

// echo answers with the Authorization header it got: in a 401 for the
// wrong key, in its reply and a tool call's arguments for the right one.
func echo(right string) llmtest.Handler {
	return func(req llmtest.Request) llmtest.Reply {
		auth := req.Header.Get("Authorization") + " " + req.Header.Get("X-Team-Token")
		if req.BearerToken() != right {
			return llmtest.Error(http.StatusUnauthorized, "invalid_request_error", "bad credentials: "+auth)
		}
		if strings.Contains(string(req.Body), "use a tool") {
			return llmtest.ToolCall("lookup", `{"auth":"`+auth+`"}`)
		}
		return llmtest.OK("you called me with " + auth)
	}
}

func customConfig(url, keyRef string) model.AgentConfig {
	return model.ParseAgentConfig([]byte(`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{"url":"` + url + `","model_id":"team",
		"api_key":` + keyRef + `,"request_headers":{"X-Team-Token":{"env_var_label":"TEAM_TOKEN"}}}}}}`))
}

// An endpoint that echoes its credentials: its answer, its tool call's
// arguments and its error reach the run redacted.
func TestEndpointEchoesAreRedacted(t *testing.T) {
	const key, token = "sk-echo-key-5b2e91d0", "tok-header-77aa21"
	srv := llmtest.NewServer(echo(key))
	defer srv.Close()
	t.Setenv("TEAM_KEY", key)
	t.Setenv("TEAM_TOKEN", token)
	e := endpoints()
	e.EnvVars["TEAM_TOKEN"] = true
	m, err := e.For(context.Background(), "ws_1", customConfig(srv.URL, `{"env_var_label":"TEAM_KEY"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	turn, _, err := m.Respond(context.Background(), model.Conversation{SystemPrompt: "p", Turns: []model.Turn{{Role: "user", Text: "hi"}}})
	if err != nil || turn.Text != "you called me with Bearer "+RedactedSecret+" "+RedactedSecret {
		t.Fatalf("reply %q, %v", turn.Text, err)
	}
	turn, _, err = m.Respond(context.Background(), model.Conversation{SystemPrompt: "p", Turns: []model.Turn{{Role: "user", Text: "use a tool"}}})
	if err != nil || len(turn.Calls) != 1 || strings.Contains(turn.Calls[0].Arguments, key) || strings.Contains(turn.Calls[0].Arguments, token) ||
		!strings.Contains(turn.Calls[0].Arguments, RedactedSecret) {
		t.Fatalf("tool call %+v, %v", turn.Calls, err)
	}

	t.Setenv("TEAM_KEY", "sk-wrong-key-000000")
	m, err = e.For(context.Background(), "ws_1", customConfig(srv.URL, `{"env_var_label":"TEAM_KEY"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = m.Respond(context.Background(), model.Conversation{SystemPrompt: "p", Turns: []model.Turn{{Role: "user", Text: "hi"}}})
	if err == nil || !model.IsEndpointError(err) || strings.Contains(err.Error(), "sk-wrong-key") || strings.Contains(err.Error(), token) ||
		!strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), RedactedSecret) {
		t.Fatalf("error: %v", err)
	}
}

// One workspace's failing calls to a URL open its own breaker only:
// another workspace calling the same URL (and the same workspace with
// another key) is still served, and never sees the first one's error.
func TestEndpointBreakersAreNotSharedAcrossWorkspaces(t *testing.T) {
	const right, wrong = "sk-right-key-31c9f0", "sk-wrong-key-8d1a47"
	srv := llmtest.NewServer(echo(right))
	defer srv.Close()
	e := endpoints()
	e.BreakAfter, e.BreakFor, e.Concurrency = 1, time.Hour, 1
	e.EnvVars["TEAM_TOKEN"] = true
	e.Secrets = staticSecrets{"ws_a/s": wrong, "ws_b/s": right, "ws_a/s2": right}
	cfg := customConfig(srv.URL, `{"secret_id":"s"}`)
	ask := func(ws string, cfg model.AgentConfig) (model.Turn, error) {
		t.Helper()
		m, err := e.For(context.Background(), ws, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		turn, _, err := m.Respond(context.Background(), model.Conversation{SystemPrompt: "p", Turns: []model.Turn{{Role: "user", Text: "hi"}}})
		return turn, err
	}
	if _, err := ask("ws_a", cfg); err == nil || strings.Contains(err.Error(), "in a row") {
		t.Fatalf("workspace A's first call: %v", err)
	}
	before := srv.Len()
	if _, err := ask("ws_a", cfg); err == nil || !strings.Contains(err.Error(), "in a row") || strings.Contains(err.Error(), wrong) {
		t.Fatalf("workspace A's breaker is not open: %v", err)
	}
	if srv.Len() != before {
		t.Fatal("an open breaker called the endpoint")
	}
	for _, ws := range []string{"ws_b", "ws_a"} {
		c := cfg
		if ws == "ws_a" { // the same workspace with the right key is another endpoint
			c = customConfig(srv.URL, `{"secret_id":"s2"}`)
		}
		turn, err := ask(ws, c)
		if err != nil || !strings.HasPrefix(turn.Text, "you called me with") || strings.Contains(turn.Text, right) {
			t.Fatalf("%s after A's failures: %q %v", ws, turn.Text, err)
		}
	}
	// A's slot is not B's: A holding its only slot does not hold up B.
	hold := make(chan struct{})
	held := make(chan struct{})
	slow := llmtest.NewServer(func(req llmtest.Request) llmtest.Reply {
		if req.BearerToken() == wrong {
			close(held)
			select {
			case <-hold:
			case <-req.Context.Done():
			}
		}
		return llmtest.OK("ok")
	})
	defer slow.Close()
	defer close(hold)
	done := make(chan error, 1)
	go func() { _, err := ask("ws_a", customConfig(slow.URL, `{"secret_id":"s"}`)); done <- err }()
	<-held
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mb, _ := e.For(ctx, "ws_b", customConfig(slow.URL, `{"secret_id":"s"}`), nil)
	if _, _, err := mb.Respond(ctx, model.Conversation{SystemPrompt: "p"}); err != nil {
		t.Fatalf("B waited on A's slot: %v", err)
	}
	hold <- struct{}{}
	if err := <-done; err != nil {
		t.Fatalf("A's slow call: %v", err)
	}
}

type staticSecrets map[string]string

func (s staticSecrets) Open(_ context.Context, ws, id string) (string, error) {
	v, ok := s[ws+"/"+id]
	if !ok {
		return "", errors.New("no such secret")
	}
	return v, nil
}

// A dynamic variable sent as a header is the test's own data: an echo of
// it reaches the run as it is.
func TestDynamicVariablesAreNotRedacted(t *testing.T) {
	srv := llmtest.NewServer(func(req llmtest.Request) llmtest.Reply {
		return llmtest.OK("Hello " + req.Header.Get("X-Customer"))
	})
	defer srv.Close()
	cfg := model.ParseAgentConfig([]byte(`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":{"url":"` + srv.URL + `",
		"request_headers":{"X-Customer":{"variable_name":"customer"}}}}}}`))
	m, err := endpoints().For(context.Background(), "ws_1", cfg, map[string]string{"customer": "Johnathan Smith"})
	if err != nil {
		t.Fatal(err)
	}
	turn, _, err := m.Respond(context.Background(), model.Conversation{SystemPrompt: "p"})
	if err != nil || turn.Text != "Hello Johnathan Smith" {
		t.Fatalf("%q %v", turn.Text, err)
	}
}
