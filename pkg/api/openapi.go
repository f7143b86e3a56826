package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
)

// schemasYAML holds the wire shapes the operations name.
//
//go:embed schemas.yaml
var schemasYAML []byte

// examplesYAML holds one realistic request body and success answer of each
// operation, by operation name; examples_test.go checks them against their
// schemas.
//
//go:embed examples.yaml
var examplesYAML []byte

// example is an operation's example request body and success answer; nil
// where it has none.
type example struct {
	Request  any `yaml:"request"`
	Response any `yaml:"response"`
}

// examples is examples.yaml parsed once, by operation name.
var examples = sync.OnceValues(func() (map[string]example, error) {
	var out map[string]example
	if err := yaml.Unmarshal(examplesYAML, &out); err != nil {
		return nil, fmt.Errorf("examples.yaml: %w", err)
	}
	return out, nil
})

// Version is the API version the document states (spec 9).
const Version = "1.0"

// Paths the gateway serves without a key: the document and its rendering.
const (
	OpenAPIPath = "/v1/openapi.json"
	DocsPath    = "/docs"
	// ConsolePath is the console's pages; ConsoleSessionPath its sign-in.
	ConsolePath        = "/console"
	ConsoleSessionPath = ConsolePath + "/session"
)

// errorStatuses are what any operation may answer, whatever it does: no
// or a bad key, a missing permission, the rate limit, and a platform that
// failed, is briefly unavailable or did not answer in time.
var errorStatuses = []int{401, 403, 429, 500, 503, 504}

// ErrorStatuses are the error statuses op may answer: those of every
// operation, those of a path id (404), of a write (413, 415), of a write that
// honours an Idempotency-Key (422 idempotency_key_reused), of a body
// (400, 422) or a query (422), and its own.
func (op Operation) ErrorStatuses() []int {
	out := slices.Clone(errorStatuses)
	if len(op.Vars()) > 0 {
		out = append(out, http.StatusNotFound)
	}
	if !op.Reads() {
		// A body too large, or compressed, is refused unread.
		out = append(out, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	}
	if idempotent(op) == "with Idempotency-Key" {
		out = append(out, http.StatusUnprocessableEntity) // the key sent with another request
	}
	if op.Request != "" {
		out = append(out, http.StatusBadRequest, http.StatusUnprocessableEntity)
	}
	if len(op.Query) > 0 {
		out = append(out, http.StatusUnprocessableEntity)
	}
	out = append(out, op.Errors...)
	slices.Sort(out)
	return slices.Compact(out)
}

// OpenAPI is the OpenAPI 3.1 document of the API, made from Operations and
// schemas.yaml, as JSON.
func OpenAPI() ([]byte, error) { return openAPIJSON() }

var openAPIJSON = indentedOnce(document)

// indentedOnce is the document build makes, as indented JSON, made at the
// first call and kept.
func indentedOnce(build func() (map[string]any, error)) func() ([]byte, error) {
	return sync.OnceValues(func() ([]byte, error) {
		doc, err := build()
		if err != nil {
			return nil, err
		}
		return json.MarshalIndent(doc, "", "  ")
	})
}

// sharedComponents is schemas.yaml parsed once, for readers that do not change
// it (resolving a schema, compiling a query); document() adds to its own.
var sharedComponents = sync.OnceValues(parseComponents)

func parseComponents() (map[string]any, error) {
	var components map[string]any
	if err := yaml.Unmarshal(schemasYAML, &components); err != nil {
		return nil, fmt.Errorf("schemas.yaml: %w", err)
	}
	return components, nil
}

var resolved sync.Map // schema name -> map[string]any

// Schema returns the named schema of the document with every reference
// in it replaced by what it names: a JSON Schema that stands alone (the
// event catalog serves the data schemas of events this way). The map is
// shared between callers: read it, do not change it.
func Schema(name string) (map[string]any, error) {
	if s, ok := resolved.Load(name); ok {
		return s.(map[string]any), nil
	}
	s, err := resolveSchema(name)
	if err != nil {
		return nil, err
	}
	resolved.Store(name, s)
	return s, nil
}

func resolveSchema(name string) (map[string]any, error) {
	components, err := sharedComponents()
	if err != nil {
		return nil, err
	}
	s, ok := components["schemas"].(map[string]any)[name]
	if !ok {
		return nil, fmt.Errorf("no schema %s", name)
	}
	r, err := resolveRefs(components, s, "schema "+name)
	if err != nil {
		return nil, err
	}
	return r.(map[string]any), nil
}

// resolveRefs is v with every schema reference in it replaced by what it
// names; what says where v comes from, for errors.
func resolveRefs(components map[string]any, v any, what string) (any, error) {
	schemas := components["schemas"].(map[string]any)
	var resolve func(v any, depth int) (any, error)
	resolve = func(v any, depth int) (any, error) {
		if depth > 32 {
			return nil, fmt.Errorf("%s: references nest too deep", what)
		}
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				target, ok := schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
				if !ok {
					return nil, fmt.Errorf("%s: unknown reference %s", what, ref)
				}
				if len(x) == 1 {
					return resolve(target, depth+1)
				}
				// Keywords beside a reference apply too (a description, a
				// default, a tighter bound): the target joins them as one
				// more schema to satisfy.
				siblings := make(map[string]any, len(x))
				for k, e := range x {
					if k != "$ref" {
						siblings[k] = e
					}
				}
				allOf, _ := siblings["allOf"].([]any)
				siblings["allOf"] = append(append([]any{}, allOf...), target)
				return resolve(siblings, depth+1)
			}
			out := make(map[string]any, len(x))
			for k, e := range x {
				r, err := resolve(e, depth+1)
				if err != nil {
					return nil, err
				}
				out[k] = r
			}
			return out, nil
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				r, err := resolve(e, depth+1)
				if err != nil {
					return nil, err
				}
				out[i] = r
			}
			return out, nil
		}
		return v, nil
	}
	return resolve(v, 0)
}

func document() (map[string]any, error) {
	components, err := parseComponents()
	if err != nil {
		return nil, err
	}
	components["responses"] = errorResponses()
	components["securitySchemes"] = map[string]any{
		"apiKey": map[string]any{"type": "apiKey", "in": "header", "name": "x-api-key",
			"description": "An API key of a service account; its permissions decide what it may do."},
		"xiApiKey": map[string]any{"type": "apiKey", "in": "header", "name": "xi-api-key",
			"description": "The same key in the header the official ElevenLabs SDKs send it in; with both headers, they must agree."},
		"consoleSession": map[string]any{"type": "apiKey", "in": "cookie", "name": "voiceai_console",
			"description": "The console's session (POST " + ConsoleSessionPath + "): the key sealed with its expiry; taken only without a key header, with X-CSRF-Token, from the gateway's own origin. Over TLS its name is __Host-voiceai_console, and only that name is read there."},
		"csrfToken": map[string]any{"type": "apiKey", "in": "header", "name": "X-CSRF-Token",
			"description": "The token the console's sign-in answered, which goes with its session cookie."},
	}
	exs, err := examples()
	if err != nil {
		return nil, err
	}
	paths := map[string]any{}
	for _, op := range Operations {
		item, _ := paths[op.Path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			if params := pathParams(op); len(params) > 0 {
				item["parameters"] = params
			}
			paths[op.Path] = item
		}
		o, err := operation(op, components, exs[op.Name])
		if err != nil {
			return nil, err
		}
		item[strings.ToLower(op.Method)] = o
		if op.Reads() {
			head := map[string]any{"operationId": op.Name + ".head", "tags": o["tags"],
				"summary": op.Summary + " (headers only)", "responses": headResponses(o["responses"].(map[string]any))}
			item["head"] = head
		}
	}
	for path, item := range metaPaths() {
		paths[path] = item
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "Voice agent QA platform API",
			"version": Version,
			"description": "Agents, conversation triage tickets, agent tests and their invocations, API keys and signed webhooks. " +
				"Every request carries an API key in the x-api-key (or xi-api-key) header. Errors answer {detail: {status, message, request_id}}, " +
				"validation errors {detail: [{loc, msg, type}]}. A write with an Idempotency-Key header may be retried safely: " +
				"the same key with the same request answers the first result, with another request it is refused (422 idempotency_key_reused) " +
				"(x-idempotent says which operations honour it). " +
				"An optional member of a request body sent as null is taken as absent (the official SDKs send an optional left undefined so), " +
				"unless its schema takes null, where null means what the schema says (a PATCH's null clears). " +
				"Likewise a query parameter given with an empty value (?status=) is taken as absent, and one an operation does not list is ignored.",
		},
		"servers": []any{map[string]any{"url": "/"}},
		"security": []any{map[string]any{"apiKey": []any{}}, map[string]any{"xiApiKey": []any{}},
			map[string]any{"consoleSession": []any{}, "csrfToken": []any{}}},
		"tags":       tags(),
		"paths":      paths,
		"webhooks":   webhooks(),
		"components": components,
	}, nil
}

func operation(op Operation, components map[string]any, ex example) (map[string]any, error) {
	if op.Summary == "" || len(op.Success) == 0 {
		return nil, fmt.Errorf("operation %s has no doc", op.Name)
	}
	o := map[string]any{
		"operationId": op.Name,
		"summary":     op.Summary,
		"tags":        []any{op.Service},
		"description": "Needs one of the permissions: " + strings.Join(op.Perms, ", ") + ".",
	}
	for _, name := range []string{op.Request, op.Response} {
		if name != "" && components["schemas"].(map[string]any)[name] == nil {
			return nil, fmt.Errorf("operation %s names the schema %q, which schemas.yaml lacks", op.Name, name)
		}
	}
	var params []any
	for _, q := range op.Query {
		if components["parameters"].(map[string]any)[q] == nil {
			return nil, fmt.Errorf("operation %s names the parameter %q, which schemas.yaml lacks", op.Name, q)
		}
		params = append(params, ref("parameters", q))
	}
	params = append(params, map[string]any{"name": HeaderIdempotencyKey, "in": "header", "required": false,
		"description": idempotencyNote(op),
		"schema":      map[string]any{"type": "string", "minLength": 1, "maxLength": MaxIdempotencyKeyLen}})
	o["parameters"] = params
	o["x-idempotent"] = idempotent(op)
	if op.Request != "" {
		content := jsonContent(op.Request)
		withExample(content, ex.Request)
		o["requestBody"] = map[string]any{"required": true, "content": content}
	}
	responses := map[string]any{}
	for i, code := range op.Success {
		r := map[string]any{"description": http.StatusText(code), "headers": answerHeaders()}
		if op.Response != "" {
			content := jsonContent(op.Response)
			if i == 0 { // the usual answer
				withExample(content, ex.Response)
			}
			if op.Name == GetInvocation.Name {
				content["application/xml"] = map[string]any{"schema": map[string]any{"type": "string", "description": "A JUnit XML report."}}
			}
			r["content"] = content
		}
		responses[strconv.Itoa(code)] = r
	}
	for _, code := range op.ErrorStatuses() {
		responses[strconv.Itoa(code)] = ref("responses", errorResponseName(code))
	}
	o["responses"] = responses
	return o, nil
}

// idempotent says when the gateway may send a request for op twice
// (Operation.Repeatable): "always" (it only reads), "with Idempotency-Key"
// (the key answers the first result), or "never".
func idempotent(op Operation) string {
	switch {
	case op.Takes || op.Once != "":
		return "never"
	case op.Reads() || op.Safe:
		return "always"
	}
	return "with Idempotency-Key"
}

func idempotencyNote(op Operation) string {
	switch {
	case op.Takes:
		return "Not honoured: each poll takes a delivery; the gateway never sends it twice."
	case op.Once != "":
		return "The gateway sends this request once: " + op.Once + "."
	case op.Reads() || op.Safe:
		return "Not needed: the operation only reads."
	}
	return "Makes the request safe to retry: the same key in the same workspace and operation, sent with the same request " +
		"(path, query and body), answers the first request's result and changes nothing again; the gateway may then send a slow " +
		"or lost request twice. The key sent with another request is refused (422 idempotency_key_reused at [header, Idempotency-Key]) " +
		"and changes nothing. Without a key every request is a new command."
}

func errorResponseName(code int) string { return "Error" + strconv.Itoa(code) }

// errorResponses are the error answers operations share, by status; each
// names the catalog's statuses (pkg/apperr) answered with its code.
func errorResponses() map[string]any {
	statuses := map[int][]string{}
	for _, e := range apperr.Catalog {
		code := httpx.StatusOf(e)
		if !slices.Contains(statuses[code], e.Status) {
			statuses[code] = append(statuses[code], e.Status)
		}
	}
	out := map[string]any{}
	for _, op := range Operations {
		for _, code := range op.ErrorStatuses() {
			schema := "Error"
			if code == http.StatusUnprocessableEntity {
				schema = "ValidationError"
			}
			description := http.StatusText(code)
			if s := statuses[code]; len(s) > 0 {
				description += "; detail.status is one of: " + strings.Join(s, ", ") + "."
			}
			headers := answerHeaders() // the rate-limit ones when the key was counted (not on a 401)
			if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
				headers["Retry-After"] = map[string]any{
					"description": "Seconds to wait before a retry.", "schema": map[string]any{"type": "integer"}}
			}
			r := map[string]any{"description": description, "content": jsonContent(schema), "headers": headers}
			out[errorResponseName(code)] = r
		}
	}
	return out
}

// headResponses are a GET's answers without their bodies.
func headResponses(get map[string]any) map[string]any {
	out := map[string]any{}
	for code, r := range get {
		if _, shared := r.(map[string]any)["$ref"]; shared {
			out[code] = r
			continue
		}
		head := map[string]any{"description": r.(map[string]any)["description"]}
		if h := r.(map[string]any)["headers"]; h != nil {
			head["headers"] = h
		}
		out[code] = head
	}
	return out
}

func pathParams(op Operation) []any {
	var out []any
	for _, v := range op.Vars() {
		out = append(out, map[string]any{"name": v, "in": "path", "required": true,
			"description": "The " + IDParams[v].Noun + "'s id.", "schema": map[string]any{"type": "string"}})
	}
	return out
}

// answerHeaders are those every answer carries (X-Request-Id, spec 7),
// and those of the key's rate limits (spec 8) once it is counted.
func answerHeaders() map[string]any {
	h := map[string]any{}
	for name, what := range map[string]string{
		"X-Request-Id":          "Identifies the request for troubleshooting: the caller's own, when it sent one that is well formed, else one the gateway made.",
		"X-RateLimit-Limit":     "The requests the key may make in the current window.",
		"X-RateLimit-Remaining": "The requests left in the window.",
		"X-RateLimit-Reset":     "When the window resets, in Unix seconds.",
	} {
		h[name] = map[string]any{"description": what, "schema": map[string]any{"type": "integer"}}
	}
	return h
}

func tags() []any {
	var out []any
	for _, t := range [][2]string{
		{"agents", "Voice agents."},
		{"tickets", "Conversation triage tickets."},
		{"testing", "Agent tests, folders and test invocations."},
		{"webhooks", "Signed webhooks, their delivery logs and event ingestion."},
		{"identity", "Service accounts, API keys and workspace members."},
	} {
		out = append(out, map[string]any{"name": t[0], "description": t[1]})
	}
	return out
}

// webhooks documents what the platform sends to a webhook's url: one
// signed POST per event (spec 6).
func webhooks() map[string]any {
	data := []any{}
	for _, s := range []string{"CallStartedData", "CallEndedData", "ConversationEndedData", "EscalationTriggeredData", "TicketEventData", "InvocationEventData"} {
		data = append(data, ref("schemas", s))
	}
	return map[string]any{
		"event": map[string]any{"post": map[string]any{
			"summary": "An event delivered to a webhook's url",
			"description": "X-Service-Signature is sha256= and the lowercase hex HMAC-SHA256 of the raw body, keyed with the webhook's secret; " +
				"compare it in constant time. ElevenLabs-Signature (t=<unix seconds>,v0=<hex HMAC-SHA256 of \"<t>.<raw body>\">, keyed with the secret) " +
				"is what the official SDK's webhooks.constructEvent checks; webhook-id, webhook-timestamp and webhook-signature (v1,<base64 HMAC-SHA256 of " +
				"\"<id>.<timestamp>.<raw body>\">, keyed with the base64 after whsec_ in the secret, else the secret's bytes) are the Standard Webhooks headers. " +
				"Each attempt is signed with its own time. X-Service-Event-Id names the event: a receiver that has seen it answers 200 again. " +
				"Any status but 2xx is retried as the webhook's retry_config says. The data of each event is one of the schemas listed under data.",
			"parameters": []any{
				map[string]any{"name": "X-Service-Signature", "in": "header", "required": true, "schema": map[string]any{"type": "string", "pattern": "^sha256=[0-9a-f]{64}$"}},
				map[string]any{"name": "X-Service-Event-Id", "in": "header", "required": true, "schema": map[string]any{"type": "string"}},
				map[string]any{"name": "X-Service-Delivery-Attempt", "in": "header", "required": true, "schema": map[string]any{"type": "integer", "minimum": 1}},
				map[string]any{"name": "X-Service-Event", "in": "header", "required": true, "schema": map[string]any{"type": "string"}},
				map[string]any{"name": "X-Service-Webhook-Id", "in": "header", "required": true, "schema": map[string]any{"type": "string"}},
				map[string]any{"name": "X-Service-Timestamp", "in": "header", "required": true, "schema": map[string]any{"type": "string"}},
				map[string]any{"name": "ElevenLabs-Signature", "in": "header", "required": true, "schema": map[string]any{"type": "string", "pattern": "^t=[0-9]+,v0=[0-9a-f]{64}$"}},
				map[string]any{"name": "webhook-id", "in": "header", "required": true, "schema": map[string]any{"type": "string"}},
				map[string]any{"name": "webhook-timestamp", "in": "header", "required": true, "schema": map[string]any{"type": "string"}},
				map[string]any{"name": "webhook-signature", "in": "header", "required": true, "schema": map[string]any{"type": "string", "pattern": "^v1,[A-Za-z0-9+/]{43}=$"}},
			},
			"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{
				"schema": map[string]any{"allOf": []any{ref("schemas", "EventEnvelope")},
					"properties": map[string]any{"data": map[string]any{"anyOf": data}}}}}},
			"responses": map[string]any{"200": map[string]any{"description": "Received."}},
		}},
	}
}

// metaPaths are what the gateway serves without a key beside the
// operations: its probes, this document, the AsyncAPI one and the
// reference page.
func metaPaths() map[string]any {
	item := func(id, summary string, responses map[string]any) map[string]any {
		op := func(suffix, summary string, responses map[string]any) map[string]any {
			return map[string]any{"operationId": "meta." + id + suffix, "summary": summary, "tags": []any{"meta"},
				"security": []any{}, "responses": responses}
		}
		return map[string]any{"get": op("", summary, responses), "head": op(".head", summary+" (headers only)", headResponses(responses))}
	}
	object := func(description string, props map[string]any) map[string]any {
		return map[string]any{"description": description, "content": map[string]any{"application/json": map[string]any{
			"schema": map[string]any{"type": "object", "properties": props}}}}
	}
	checks := map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"},
		"description": "Each check: ok, or why it fails."}
	assets := item("docs_asset", "The reference page and its assets (served from the binary)", map[string]any{
		"200": map[string]any{"description": "The page (text/html) or one of its scripts and styles."},
	})
	assets["parameters"] = []any{map[string]any{"name": "asset", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}}
	consoleAssets := item("console_asset", "The console's pages, scripts and styles (served from the binary; no key needed to load them)", map[string]any{
		"200": map[string]any{"description": "A page (text/html), script or style sheet."},
		"304": map[string]any{"description": "Unchanged since the ETag the browser holds."},
	})
	consoleAssets["parameters"] = assets["parameters"]
	return map[string]any{
		"/healthz": item("healthz", "Liveness: the process serves", map[string]any{
			"200": object("Alive.", map[string]any{"status": map[string]any{"const": "ok"}}),
			"503": object("A liveness check fails.", map[string]any{"status": map[string]any{"const": "failing"}, "checks": checks}),
		}),
		"/readyz": item("readyz", "Readiness: NATS, the key cache and the rate limits answer", map[string]any{
			"200": object("Ready.", map[string]any{"ready": map[string]any{"const": true}, "checks": checks}),
			"503": object("Not ready yet, or not any more.", map[string]any{"ready": map[string]any{"const": false}, "checks": checks}),
		}),
		OpenAPIPath: item("openapi", "This document", map[string]any{
			"200": object("The OpenAPI 3.1 document.", map[string]any{"openapi": map[string]any{"type": "string"}}),
		}),
		AsyncAPIPath: item("asyncapi", "The AsyncAPI 3.0 document of the event streams", map[string]any{
			"200": object("The AsyncAPI document.", map[string]any{"asyncapi": map[string]any{"type": "string"}}),
		}),
		DocsPath: item("docs", "The reference page", map[string]any{
			"301": map[string]any{"description": "To " + DocsPath + "/."},
		}),
		DocsPath + "/{asset}": assets,
		ConsolePath: item("console", "The console, the pages for people", map[string]any{
			"301": map[string]any{"description": "To " + ConsolePath + "/."},
		}),
		ConsolePath + "/{asset}": consoleAssets,
		ConsoleSessionPath:       consoleSession(object),
	}
}

// consoleSession documents the console's sign-in: a key traded for an
// HttpOnly session cookie, answered with the CSRF token every API request
// made with the cookie must carry as X-CSRF-Token.
func consoleSession(object func(string, map[string]any) map[string]any) map[string]any {
	info := object("The session: its CSRF token, expiry, caller and the operations its key may call.", map[string]any{
		"csrf_token": map[string]any{"type": "string"}, "expires_at_unix": map[string]any{"type": "integer"},
		"workspace_id": map[string]any{"type": "string"}, "user_id": map[string]any{"type": "string"},
		"user_name": map[string]any{"type": "string"}, "key_id": map[string]any{"type": "string"},
		"key_name":    map[string]any{"type": "string"},
		"permissions": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"operations":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	})
	refusal := func(d string) map[string]any {
		return map[string]any{"description": d, "content": jsonContent("Error")}
	}
	op := func(id, summary string, extra map[string]any, responses map[string]any) map[string]any {
		o := map[string]any{"operationId": "meta.console_session." + id, "summary": summary, "tags": []any{"meta"},
			"security": []any{}, "responses": responses}
		for k, v := range extra {
			o[k] = v
		}
		return o
	}
	return map[string]any{
		"get": op("get", "The console session of the cookie (a page keeps its CSRF token in memory and asks again on load)", nil, map[string]any{
			"200": info, "401": refusal("Signed out, or the session or its key is no longer valid."),
			"403": refusal("From another origin, or the key may not be used from this address."),
		}),
		"post": op("sign_in", "Sign in to the console with an API key: sets the session cookie (HttpOnly, SameSite=Strict, the key sealed with its expiry: 8 hours at most)",
			map[string]any{"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{
				"schema": map[string]any{"type": "object", "required": []any{"api_key"},
					"properties": map[string]any{"api_key": map[string]any{"type": "string"}}}}}}},
			map[string]any{
				"200": info, "400": refusal("No key, or a malformed body."), "401": refusal("The key is not valid."),
				"403": refusal("From another origin, or the key may not be used from this address."),
				"503": refusal("The gateway has no deployment secret to seal sessions with."),
			}),
		"delete": op("sign_out", "Sign out: clears the session cookie", nil, map[string]any{
			"204": map[string]any{"description": "Signed out."}, "403": refusal("From another origin."),
		}),
	}
}

// withExample gives content's JSON media type the example, when there is one.
func withExample(content map[string]any, example any) {
	if example != nil {
		content["application/json"].(map[string]any)["example"] = example
	}
}

func jsonContent(schema string) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": ref("schemas", schema)}}
}

func ref(kind, name string) map[string]any {
	return map[string]any{"$ref": "#/components/" + kind + "/" + name}
}
