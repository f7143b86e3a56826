// Package agentconfig reads what the platform acts on in an agent's
// public conversation_config: the model that plays the agent's turns,
// and, when it is the agent's own endpoint ("custom-llm"), how to reach
// and authenticate to it. The agents service validates it with Check at
// create and update; the testing runner calls the endpoint it describes.
package agentconfig

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/outbound"
)

// CustomLLM is the prompt's llm value that hands the agent's turns to its
// own OpenAI-compatible endpoint, described by custom_llm.
const CustomLLM = "custom-llm"

// API types a custom_llm endpoint may have (api_type; empty: chat
// completions).
const (
	APIChatCompletions = "chat_completions"
	APIResponses       = "responses"
)

// Ref points at a value kept elsewhere: a workspace secret, an
// environment variable of the runner that the operator allowed, or one of
// the run's dynamic variables.
type Ref struct {
	SecretID string `json:"secret_id,omitempty"`
	EnvVar   string `json:"env_var_label,omitempty"`
	Variable string `json:"variable_name,omitempty"`
}

// Header is one request header: a literal value or a reference.
type Header struct {
	Name  string
	Value string
	Ref   *Ref
}

// Endpoint is an agent's own model endpoint (public custom_llm).
type Endpoint struct {
	URL        string
	ModelID    string
	APIKey     *Ref
	Headers    []Header
	APIVersion string
	APIType    string
}

// Prompt is what a run needs of agent.prompt beyond its text.
type Prompt struct {
	LLM         string
	Temperature *float64
	MaxTokens   *int // nil or -1: the endpoint's default
	Endpoint    *Endpoint
}

// Problem is one invalid field, its location relative to
// conversation_config.
type Problem struct {
	Loc  []any
	Msg  string
	Type string
}

type rawPrompt struct {
	LLM         string          `json:"llm"`
	Temperature *float64        `json:"temperature"`
	MaxTokens   *int            `json:"max_tokens"`
	CustomLLM   json.RawMessage `json:"custom_llm"`
}

type rawEndpoint struct {
	URL            *string                    `json:"url"`
	ModelID        string                     `json:"model_id"`
	APIKey         json.RawMessage            `json:"api_key"`
	RequestHeaders map[string]json.RawMessage `json:"request_headers"`
	APIVersion     string                     `json:"api_version"`
	APIType        string                     `json:"api_type"`
}

var (
	envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	headerName = regexp.MustCompile("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]{1,128}$")
	// reserved are headers the client sets itself.
	reserved = map[string]bool{"host": true, "content-length": true, "content-type": true, "transfer-encoding": true, "connection": true}
)

// MaxHeaderValue bounds a literal header value.
const MaxHeaderValue = 8192

// Parse reads agent.prompt of conversationConfig. It never fails: what
// is malformed is reported by Check, and left out here.
func Parse(conversationConfig []byte) Prompt {
	return parse(conversationConfig, func([]any, string, string) {})
}

// Check validates the prompt's model settings, the custom_llm endpoint's
// URL under the outbound rules (allowed: the operator's allow-list), and
// answers the prompt and every problem.
func Check(conversationConfig []byte, allowed func(host string) bool) (Prompt, []Problem) {
	var problems []Problem
	p := parse(conversationConfig, func(loc []any, msg, typ string) {
		problems = append(problems, Problem{Loc: loc, Msg: msg, Type: typ})
	})
	if p.Endpoint != nil {
		if _, bad := outbound.CheckURL(p.Endpoint.URL, allowed, "agent endpoints"); bad != nil {
			problems = append(problems, Problem{Loc: loc("url"), Msg: bad.Msg, Type: bad.Type})
			p.Endpoint = nil
		}
	}
	return p, problems
}

func loc(path ...any) []any {
	return append([]any{"agent", "prompt", "custom_llm"}, path...)
}

func parse(conversationConfig []byte, report func(loc []any, msg, typ string)) Prompt {
	var cc struct {
		Agent struct {
			Prompt json.RawMessage `json:"prompt"`
		} `json:"agent"`
	}
	var p Prompt
	if json.Unmarshal(conversationConfig, &cc) != nil || len(cc.Agent.Prompt) == 0 {
		return p
	}
	var rp rawPrompt
	if err := json.Unmarshal(cc.Agent.Prompt, &rp); err != nil {
		report([]any{"agent", "prompt"}, "Input should be an object with llm a string, temperature a number and max_tokens an integer", "type_error")
		return p
	}
	p.LLM, p.Temperature, p.MaxTokens = rp.LLM, rp.Temperature, rp.MaxTokens
	if t := rp.Temperature; t != nil && (*t < 0 || *t > 2) {
		report([]any{"agent", "prompt", "temperature"}, "Input should be between 0 and 2", "value_error")
	}
	if m := rp.MaxTokens; m != nil && *m != -1 && (*m < 1 || *m > 1_000_000) {
		report([]any{"agent", "prompt", "max_tokens"}, "Input should be -1 (the model's default) or between 1 and 1000000", "value_error")
	}
	hasEndpoint := len(rp.CustomLLM) > 0 && string(rp.CustomLLM) != "null"
	if p.LLM == CustomLLM && !hasEndpoint {
		report(loc(), "Field required when llm is \"custom-llm\": the agent's own endpoint", "missing")
		return p
	}
	if !hasEndpoint {
		return p
	}
	var re rawEndpoint
	if err := json.Unmarshal(rp.CustomLLM, &re); err != nil {
		report(loc(), "Input should be an object: url, model_id, api_key, request_headers, api_version, api_type", "type_error")
		return p
	}
	ok := true
	bad := func(l []any, msg, typ string) {
		ok = false
		report(l, msg, typ)
	}
	e := &Endpoint{ModelID: re.ModelID, APIVersion: re.APIVersion, APIType: re.APIType}
	if re.URL == nil || *re.URL == "" {
		bad(loc("url"), "Field required", "missing")
	} else {
		e.URL = *re.URL
	}
	switch re.APIType {
	case "", APIChatCompletions, APIResponses:
	default:
		bad(loc("api_type"), "Input should be 'chat_completions' or 'responses': this platform's runners call an endpoint over HTTP, streaming its answer (Chat Completions or Responses API), not over a websocket", "value_error")
	}
	if len(re.APIKey) > 0 && string(re.APIKey) != "null" {
		e.APIKey = parseRef(re.APIKey, false, loc("api_key"), bad)
	}
	for _, name := range slices.Sorted(maps.Keys(re.RequestHeaders)) {
		raw, l := re.RequestHeaders[name], loc("request_headers", name)
		if !headerName.MatchString(name) || reserved[strings.ToLower(name)] {
			bad(l, "Not a header name this platform may send (a token; not Host, Content-Length, Content-Type, Transfer-Encoding or Connection)", "value_error")
			continue
		}
		var literal string
		if json.Unmarshal(raw, &literal) == nil {
			if len(literal) > MaxHeaderValue {
				bad(l, "String should have at most 8192 characters", "string_too_long")
				continue
			}
			e.Headers = append(e.Headers, Header{Name: name, Value: literal})
			continue
		}
		if ref := parseRef(raw, true, l, bad); ref != nil {
			e.Headers = append(e.Headers, Header{Name: name, Ref: ref})
		}
	}
	if ok {
		p.Endpoint = e
	}
	return p
}

// parseRef reads {secret_id} | {env_var_label} (| {variable_name} for a
// header).
func parseRef(raw json.RawMessage, variables bool, l []any, bad func([]any, string, string)) *Ref {
	var r Ref
	want := "an object with secret_id (a workspace secret) or env_var_label (an environment variable of the runner)"
	if variables {
		want = "a string, or an object with secret_id, env_var_label or variable_name"
	}
	if json.Unmarshal(raw, &r) != nil {
		bad(l, "Input should be "+want, "type_error")
		return nil
	}
	set := 0
	for _, v := range []string{r.SecretID, r.EnvVar, r.Variable} {
		if v != "" {
			set++
		}
	}
	switch {
	case set != 1 || (!variables && r.Variable != ""):
		bad(l, "Input should be "+want+": exactly one", "value_error")
		return nil
	case r.SecretID != "" && ids.Check(r.SecretID) != nil:
		bad(append(l, "secret_id"), "No workspace secret with that id exists in this workspace", "value_error")
		return nil
	case r.EnvVar != "" && !envVarName.MatchString(r.EnvVar):
		bad(append(l, "env_var_label"), "Input should be an environment variable name (letters, digits and '_')", "value_error")
		return nil
	case r.Variable != "" && !envVarName.MatchString(r.Variable):
		bad(append(l, "variable_name"), "Input should be a dynamic variable name (letters, digits and '_')", "value_error")
		return nil
	}
	return &r
}

// SecretIDs are the workspace secrets the prompt's endpoint uses.
func (p Prompt) SecretIDs() []string {
	var out []string
	if p.Endpoint == nil {
		return nil
	}
	add := func(r *Ref) {
		if r != nil && r.SecretID != "" && !slices.Contains(out, r.SecretID) {
			out = append(out, r.SecretID)
		}
	}
	add(p.Endpoint.APIKey)
	for _, h := range p.Endpoint.Headers {
		add(h.Ref)
	}
	return out
}

// Binding says where the prompt's endpoint sends values its caller may
// not know, workspace secrets and runner environment variables: the URL,
// and each reference with where it goes ("api_key=secret:<id>",
// "header:<name>=env:<label>"), sorted. It is empty when the endpoint sends
// none (literal values and dynamic variables are the caller's own).
func (p Prompt) Binding() (url string, refs []string) {
	if p.Endpoint == nil {
		return "", nil
	}
	credential := func(r *Ref) string {
		switch {
		case r == nil:
			return ""
		case r.SecretID != "":
			return "secret:" + r.SecretID
		case r.EnvVar != "":
			return "env:" + r.EnvVar
		}
		return ""
	}
	if c := credential(p.Endpoint.APIKey); c != "" {
		refs = append(refs, "api_key="+c)
	}
	for _, h := range p.Endpoint.Headers {
		if c := credential(h.Ref); c != "" {
			refs = append(refs, "header:"+strings.ToLower(h.Name)+"="+c)
		}
	}
	if len(refs) == 0 {
		return "", nil
	}
	slices.Sort(refs)
	return p.Endpoint.URL, refs
}

// Rebinds reports whether the configuration after sends a secret or an
// environment variable somewhere the configuration before did not: to
// another URL, or under another field or header. Keeping or dropping
// bindings is no rebinding. Only a workspace admin may rebind
// (apperr.SecretBindingForbidden): whoever picks the endpoint receives
// the value.
func Rebinds(before, after []byte) bool {
	url, refs := Parse(after).Binding()
	if len(refs) == 0 {
		return false
	}
	wasURL, had := Parse(before).Binding()
	if url != wasURL {
		return true
	}
	for _, r := range refs {
		if !slices.Contains(had, r) {
			return true
		}
	}
	return false
}

// SecretPurpose derives the key that seals workspace secrets from the
// deployment secret (runtime.SubKey): the agents service seals with it,
// the runners open with it.
const SecretPurpose = "agents/workspace-secrets"

// SecretOwner is what a secret's sealed value is bound to: it opens for
// this workspace's secret only.
func SecretOwner(workspaceID, secretID string) string { return workspaceID + "/" + secretID }
