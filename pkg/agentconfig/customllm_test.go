package agentconfig

import (
	"fmt"
	"strings"
	"testing"
)

func config(prompt string) []byte { return []byte(`{"agent":{"prompt":` + prompt + `}}`) }

func TestCheckReadsAValidEndpoint(t *testing.T) {
	p, problems := Check(config(`{"llm":"custom-llm","temperature":0.3,"max_tokens":300,"custom_llm":{
		"url":"https://llm.example.com/v1","model_id":"ft-1","api_key":{"secret_id":"secret_1"},
		"request_headers":{"X-Team":"qa","X-Token":{"secret_id":"secret_2"},"X-Call":{"variable_name":"call_id"},"X-Env":{"env_var_label":"TEAM_TOKEN"}}}}`), nil)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	e := p.Endpoint
	if p.LLM != CustomLLM || *p.Temperature != 0.3 || *p.MaxTokens != 300 || e == nil || e.URL != "https://llm.example.com/v1" || e.ModelID != "ft-1" {
		t.Fatalf("%+v %+v", p, e)
	}
	if e.APIKey == nil || e.APIKey.SecretID != "secret_1" || len(e.Headers) != 4 || e.Headers[0].Name != "X-Call" || e.Headers[2].Value != "qa" {
		t.Fatalf("%+v", e)
	}
	if got := fmt.Sprint(p.SecretIDs()); got != "[secret_1 secret_2]" {
		t.Fatal(got)
	}
}

func TestCheckRefusesWhatItCannotCall(t *testing.T) {
	loopback := func(h string) bool { return h == "127.0.0.1" }
	for _, tc := range []struct{ prompt, loc, typ string }{
		{`{"llm":"custom-llm"}`, "agent.prompt.custom_llm", "missing"},
		{`{"llm":"custom-llm","custom_llm":{}}`, "agent.prompt.custom_llm.url", "missing"},
		{`{"custom_llm":{"url":"https://169.254.169.254/latest"}}`, "agent.prompt.custom_llm.url", "url_forbidden_address"},
		{`{"custom_llm":{"url":"file:///etc/passwd"}}`, "agent.prompt.custom_llm.url", "url_parsing"},
		{`{"custom_llm":{"url":"http://10.1.2.3/v1"}}`, "agent.prompt.custom_llm.url", "url_scheme"},
		{`{"custom_llm":{"url":"https://x.example","api_type":"websocket"}}`, "agent.prompt.custom_llm.api_type", "value_error"},
		{`{"custom_llm":{"url":"https://x.example","api_key":"sk-plain"}}`, "agent.prompt.custom_llm.api_key", "type_error"},
		{`{"custom_llm":{"url":"https://x.example","api_key":{"secret_id":"a","env_var_label":"B"}}}`, "agent.prompt.custom_llm.api_key", "value_error"},
		{`{"custom_llm":{"url":"https://x.example","api_key":{"variable_name":"v"}}}`, "agent.prompt.custom_llm.api_key", "value_error"},
		{`{"custom_llm":{"url":"https://x.example","api_key":{"secret_id":"a.b"}}}`, "agent.prompt.custom_llm.api_key.secret_id", "value_error"},
		{`{"custom_llm":{"url":"https://x.example","api_key":{"env_var_label":"A-B"}}}`, "agent.prompt.custom_llm.api_key.env_var_label", "value_error"},
		{`{"custom_llm":{"url":"https://x.example","request_headers":{"Host":"evil"}}}`, "agent.prompt.custom_llm.request_headers.Host", "value_error"},
		{`{"custom_llm":{"url":"https://x.example","request_headers":{"X":"` + strings.Repeat("a", 9000) + `"}}}`, "agent.prompt.custom_llm.request_headers.X", "string_too_long"},
		{`{"custom_llm":"https://x.example"}`, "agent.prompt.custom_llm", "type_error"},
		{`{"temperature":3}`, "agent.prompt.temperature", "value_error"},
		{`{"max_tokens":0}`, "agent.prompt.max_tokens", "value_error"},
	} {
		p, problems := Check(config(tc.prompt), loopback)
		if len(problems) != 1 || joinLoc(problems[0].Loc) != tc.loc || problems[0].Type != tc.typ {
			t.Errorf("%s: %+v", tc.prompt[:min(len(tc.prompt), 80)], problems)
		}
		if p.Endpoint != nil {
			t.Errorf("%s: an invalid endpoint was kept", tc.prompt[:min(len(tc.prompt), 80)])
		}
	}
	if _, problems := Check(config(`{"llm":"custom-llm","custom_llm":{"url":"http://127.0.0.1:9/v1"}}`), loopback); len(problems) != 0 {
		t.Fatalf("an allowed host: %+v", problems)
	}
	for _, api := range []string{"", "chat_completions", "responses"} {
		p, problems := Check(config(`{"llm":"custom-llm","custom_llm":{"url":"http://127.0.0.1:9/v1","api_type":"`+api+`"}}`), loopback)
		if len(problems) != 0 || p.Endpoint == nil || p.Endpoint.APIType != api {
			t.Fatalf("api_type %q: %+v %+v", api, p.Endpoint, problems)
		}
	}
	_, problems := Check(config(`{"custom_llm":{"url":"https://x.example","api_type":"websocket"}}`), loopback)
	if len(problems) != 1 || !strings.Contains(problems[0].Msg, "'chat_completions' or 'responses'") {
		t.Fatalf("websocket: %+v", problems)
	}
	if p := Parse([]byte(`{"agent":{"prompt":{"llm":"gpt-4o"}}}`)); p.LLM != "gpt-4o" || p.Endpoint != nil {
		t.Fatalf("%+v", p)
	}
}

func joinLoc(loc []any) string {
	s := make([]string, len(loc))
	for i, l := range loc {
		s[i] = fmt.Sprint(l)
	}
	return strings.Join(s, ".")
}

// A configuration rebinds a credential when it sends a secret or an
// environment variable to another URL, or under another field or header;
// keeping, dropping, literal values and dynamic variables do not.
func TestRebinds(t *testing.T) {
	cfg := func(endpoint string) []byte {
		return []byte(`{"agent":{"prompt":{"llm":"custom-llm","custom_llm":` + endpoint + `}}}`)
	}
	bound := cfg(`{"url":"https://team.example/v1","api_key":{"secret_id":"s1"},"request_headers":{"X-Org":{"env_var_label":"ORG"},"X-Lit":"plain"}}`)
	for name, c := range map[string]struct {
		before, after []byte
		want          bool
	}{
		"a new agent with a secret":     {nil, bound, true},
		"a new agent without one":       {nil, cfg(`{"url":"https://x.example/v1","request_headers":{"X-V":{"variable_name":"v"},"X-L":"lit"}}`), false},
		"unchanged":                     {bound, bound, false},
		"another url":                   {bound, cfg(`{"url":"https://evil.example/v1","api_key":{"secret_id":"s1"}}`), true},
		"the secret under a header":     {bound, cfg(`{"url":"https://team.example/v1","request_headers":{"X-Copy":{"secret_id":"s1"}}}`), true},
		"another secret":                {bound, cfg(`{"url":"https://team.example/v1","api_key":{"secret_id":"s2"}}`), true},
		"the env var as the key":        {bound, cfg(`{"url":"https://team.example/v1","api_key":{"env_var_label":"ORG"}}`), true},
		"a binding dropped":             {bound, cfg(`{"url":"https://team.example/v1","api_key":{"secret_id":"s1"}}`), false},
		"all dropped, url changed":      {bound, cfg(`{"url":"https://evil.example/v1"}`), false},
		"header name case":              {bound, cfg(`{"url":"https://team.example/v1","request_headers":{"x-org":{"env_var_label":"ORG"}}}`), false},
		"a literal header added":        {bound, cfg(`{"url":"https://team.example/v1","api_key":{"secret_id":"s1"},"request_headers":{"X-New":"lit"}}`), false},
		"custom_llm without custom-llm": {nil, []byte(`{"agent":{"prompt":{"llm":"gpt-4o","custom_llm":{"url":"https://e.example","api_key":{"secret_id":"s1"}}}}}`), true},
	} {
		if got := Rebinds(c.before, c.after); got != c.want {
			t.Errorf("%s: Rebinds = %v, want %v", name, got, c.want)
		}
	}
}
