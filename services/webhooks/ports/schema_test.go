package ports

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/api/apitest"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/outbound"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/webhooks/adapters"
	"github.com/voiceai-platform/voiceai/services/webhooks/app"
	"github.com/voiceai-platform/voiceai/services/webhooks/delivery"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// router serves the webhooks routes over an app that has no store: every
// request below is refused before the app would need one.
func router() http.Handler {
	a := &app.App{
		Ports: app.Ports{Sender: adapters.NewSender(delivery.NewSender(outbound.NewGuard([]string{"127.0.0.1"}), time.Second), adapters.Relay{})},
		Now:   func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
	}
	return httpx.WithPrincipal(api.Serve("webhooks", &Handlers{App: a}))
}

func do(t *testing.T, h http.Handler, method, path, body string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	principal.Principal{WorkspaceID: "ws_1", UserID: "sa_1", Permissions: []string{"all"}}.SetHeaders(req.Header)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// refusal is a request the router must answer 422, with typ at loc.
type refusal struct{ name, method, path, body, loc, typ string }

func refused(t *testing.T, c refusal) {
	t.Run(c.name, func(t *testing.T) {
		code, body := do(t, router(), c.method, c.path, c.body)
		if code != http.StatusUnprocessableEntity {
			t.Fatalf("%d %s, want 422", code, body)
		}
		if got := locs(t, body); got[c.loc] != c.typ {
			t.Fatalf("entries %v, want %s at %s", got, c.typ, c.loc)
		}
	})
}

// locs are the loc and type of each entry of a 422 answer.
func locs(t *testing.T, body []byte) map[string]string {
	t.Helper()
	var m struct {
		Detail []struct {
			Loc  []any  `json:"loc"`
			Type string `json:"type"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("answer %s: %v", body, err)
	}
	out := map[string]string{}
	for _, d := range m.Detail {
		b, _ := json.Marshal(d.Loc)
		out[string(b)] = d.Type
	}
	return out
}

// Every bound a handler (or the domain) used to check by hand, and now
// the operation's schema says, still refuses its bad input with 422 at
// the field, through the service's router.
func TestSchemaRefusesWhatTheHandlersDid(t *testing.T) {
	const (
		hooks   = "/v1/convai/webhooks"
		hook    = "/v1/convai/webhooks/whk_1"
		test    = "/v1/voiceai/webhooks/whk_1/test"
		result  = "/v1/voiceai/webhooks/whk_1/relay/result"
		ingest  = "/v1/convai/events"
		url     = `"url":"https://example.com/h"`
		started = `"events":["call_started"]`
	)
	long := func(c string, n int) string { return strings.Repeat(c, n) }
	for _, c := range []refusal{
		// Create and update (WebhookCreate, WebhookUpdate).
		{"url too long", "POST", hooks, `{"url":"https://example.com/` + long("a", 2048) + `",` + started + `}`, `["body","url"]`, "string_too_long"},
		{"url too long (update)", "PUT", hook, `{"url":"https://example.com/` + long("a", 2048) + `"}`, `["body","url"]`, "string_too_long"},
		{"events missing", "POST", hooks, `{` + url + `}`, `["body","events"]`, "missing"},
		{"events empty", "POST", hooks, `{` + url + `,"events":[]}`, `["body","events"]`, "too_short"},
		{"too many events", "POST", hooks, `{` + url + `,"events":[` + strings.Repeat(`"call_started",`, 50) + `"call_ended"]}`, `["body","events"]`, "too_long"},
		{"unknown event", "POST", hooks, `{` + url + `,"events":["call_started","nope"]}`, `["body","events",1]`, "enum"},
		{"unknown event (update)", "PUT", hook, `{"events":["nope"]}`, `["body","events",0]`, "enum"},
		{"secret short", "POST", hooks, `{` + url + `,` + started + `,"secret":"short"}`, `["body","secret"]`, "string_too_short"},
		{"secret long", "POST", hooks, `{` + url + `,` + started + `,"secret":"` + long("s", 257) + `"}`, `["body","secret"]`, "string_too_long"},
		{"secret with a space", "POST", hooks, `{` + url + `,` + started + `,"secret":"a secret with spaces in it"}`, `["body","secret"]`, "string_pattern_mismatch"},
		{"secret with a control character", "PUT", hook, `{"secret":"0123456789abcdef\u0007"}`, `["body","secret"]`, "string_pattern_mismatch"},
		{"secret with a no-break space", "PUT", hook, `{"secret":"0123456789\u00a0abcdef"}`, `["body","secret"]`, "string_pattern_mismatch"},
		{"max_retries high", "POST", hooks, `{` + url + `,` + started + `,"retry_config":{"max_retries":11}}`, `["body","retry_config","max_retries"]`, "less_than_equal"},
		{"max_retries negative", "PUT", hook, `{"retry_config":{"max_retries":-1}}`, `["body","retry_config","max_retries"]`, "greater_than_equal"},
		{"retry_delay zero", "POST", hooks, `{` + url + `,` + started + `,"retry_config":{"retry_delay":0}}`, `["body","retry_config","retry_delay"]`, "greater_than_equal"},
		{"retry_delay huge", "POST", hooks, `{` + url + `,` + started + `,"retry_config":{"retry_delay":3601}}`, `["body","retry_config","retry_delay"]`, "less_than_equal"},
		{"max_delay zero", "PUT", hook, `{"retry_config":{"max_delay":0}}`, `["body","retry_config","max_delay"]`, "greater_than_equal"},
		{"max_delay huge", "POST", hooks, `{` + url + `,` + started + `,"retry_config":{"max_delay":86401}}`, `["body","retry_config","max_delay"]`, "less_than_equal"},
		{"retry status low", "POST", hooks, `{` + url + `,` + started + `,"retry_config":{"retry_on_status":[500,200]}}`, `["body","retry_config","retry_on_status",1]`, "greater_than_equal"},
		{"retry status high", "PUT", hook, `{"retry_config":{"retry_on_status":[600]}}`, `["body","retry_config","retry_on_status",0]`, "less_than_equal"},
		{"too many retry statuses", "POST", hooks, `{` + url + `,` + started + `,"retry_config":{"retry_on_status":[` + strings.Repeat(`500,`, 20) + `503]}}`, `["body","retry_config","retry_on_status"]`, "too_long"},
		{"relay not a boolean (update)", "PUT", hook, `{"relay":"no"}`, `["body","relay"]`, "bool_type"},
		// A member named like a field but for its case is no field: the
		// schema does not check it, and the handler does not read it.
		{"a field in another case is not read", "POST", hooks, `{"URL":"https://example.com/h",` + started + `}`, `["body","url"]`, "missing"},

		// Test (WebhookTest).
		{"event_type missing", "POST", test, `{}`, `["body","event_type"]`, "missing"},
		{"event_type empty", "POST", test, `{"event_type":""}`, `["body","event_type"]`, "enum"},
		{"event_type unknown", "POST", test, `{"event_type":"nope"}`, `["body","event_type"]`, "enum"},

		// Logs query (WebhookLogs' parameters).
		{"log limit", "GET", "/v1/voiceai/webhooks/whk_1/logs?limit=101", "", `["query","limit"]`, "less_than_equal"},
		{"log event", "GET", "/v1/voiceai/webhooks/whk_1/logs?event=nope", "", `["query","event"]`, "enum"},
		{"log status", "GET", "/v1/voiceai/webhooks/whk_1/logs?status=ok", "", `["query","status"]`, "enum"},
		{"log time", "GET", "/v1/voiceai/webhooks/whk_1/logs?start_time=0", "", `["query","start_time"]`, "greater_than_equal"},
		{"log window reversed", "GET", "/v1/voiceai/webhooks/whk_1/logs?start_time=2000000000&end_time=1000000000", "", `["query","end_time"]`, "value_error"},

		// Relay result (RelayResult).
		{"relay status below 100", "POST", result, `{"token":"t.m","status_code":99}`, `["body","status_code"]`, "greater_than_equal"},
		{"relay status above 599", "POST", result, `{"token":"t.m","status_code":600}`, `["body","status_code"]`, "less_than_equal"},
		{"relay token too long", "POST", result, `{"token":"` + long("t", 1025) + `","status_code":200}`, `["body","token"]`, "string_too_long"},

		// Ingestion (EventIngest and the spec 6.2 data schemas).
		{"event missing", "POST", ingest, `{"data":{}}`, `["body","event"]`, "missing"},
		{"event unknown", "POST", ingest, `{"event":"nope","data":{}}`, `["body","event"]`, "enum"},
		{"a ticket event is not ingested", "POST", ingest, `{"event":"ticket_created","data":{}}`, `["body","event"]`, "enum"},
		{"data missing", "POST", ingest, `{"event":"call_ended"}`, `["body","data"]`, "missing"},
		{"data null", "POST", ingest, `{"event":"call_ended","data":null}`, `["body","data"]`, "model_type"},
		{"data not an object", "POST", ingest, `{"event":"call_ended","data":[1]}`, `["body","data"]`, "model_type"},
		{"integer with a fraction", "POST", ingest, `{"event":"call_ended","data":{"duration_seconds":1.5}}`, `["body","data","duration_seconds"]`, "int_type"},
		// (12.0 and 1e3 are the integers 12 and 1000: taken, and stored so.)
		{"number beyond a float64", "POST", ingest, `{"event":"conversation_ended","data":{"transcript":[{"role":"user","time_in_call_secs":1e400}]}}`, `["body","data","transcript",0,"time_in_call_secs"]`, "finite_number"},
		{"free-form number beyond a float64", "POST", ingest, `{"event":"agent_busy","data":{"load":-1e999}}`, `["body","data","load"]`, "finite_number"},
		{"lone surrogate", "POST", ingest, `{"event":"agent_busy","data":{"note":"a\ud800b"}}`, `["body","data","note"]`, "string_unicode"},
		{"integer beyond 64 bits", "POST", ingest, `{"event":"conversation_ended","data":{"knowledge_base_queries":99999999999999999999}}`, `["body","data","knowledge_base_queries"]`, "int_type"},
		{"integer a string", "POST", ingest, `{"event":"call_ended","data":{"duration_seconds":"12"}}`, `["body","data","duration_seconds"]`, "int_type"},
		{"boolean a string", "POST", ingest, `{"event":"call_ended","data":{"transcript_available":"yes"}}`, `["body","data","transcript_available"]`, "bool_type"},
		{"number a string", "POST", ingest, `{"event":"call_ended","data":{"satisfaction_score":"high"}}`, `["body","data","satisfaction_score"]`, "float_type"},
		{"id not a string", "POST", ingest, `{"event":"call_started","data":{"call_id":7}}`, `["body","data","call_id"]`, "string_type"},
		{"id malformed", "POST", ingest, `{"event":"call_started","data":{"agent_id":"a b"}}`, `["body","data","agent_id"]`, "string_pattern_mismatch"},
		{"nested field", "POST", ingest, `{"event":"call_started","data":{"metadata":{"call_queue":1}}}`, `["body","data","metadata","call_queue"]`, "string_type"},
		{"nested object not an object", "POST", ingest, `{"event":"call_started","data":{"metadata":"q"}}`, `["body","data","metadata"]`, "model_type"},
		{"string array item", "POST", ingest, `{"event":"conversation_ended","data":{"topics_discussed":["a",1]}}`, `["body","data","topics_discussed",1]`, "string_type"},
		{"nested number", "POST", ingest, `{"event":"conversation_ended","data":{"sentiment_analysis":{"sentiment_score":"hi"}}}`, `["body","data","sentiment_analysis","sentiment_score"]`, "float_type"},
		{"escalation string", "POST", ingest, `{"event":"escalation_triggered","data":{"target_queue":false}}`, `["body","data","target_queue"]`, "string_type"},
		{"escalation id", "POST", ingest, `{"event":"escalation_triggered","data":{"conversation_id":"../x"}}`, `["body","data","conversation_id"]`, "string_pattern_mismatch"},
		{"another event's ids", "POST", ingest, `{"event":"agent_busy","data":{"conversation_id":"c/1"}}`, `["body","data","conversation_id"]`, "string_pattern_mismatch"},
		{"another event's id type", "POST", ingest, `{"event":"quota_exceeded","data":{"agent_id":false}}`, `["body","data","agent_id"]`, "string_type"},
	} {
		refused(t, c)
	}
}

// What no schema says stays the app's (or the handler's), and is still
// refused.
func TestAppRefusesWhatNoSchemaSays(t *testing.T) {
	const hooks, ingest = "/v1/convai/webhooks", "/v1/convai/events"
	for _, c := range []refusal{
		{"url missing", "POST", hooks, `{"events":["call_started"]}`, `["body","url"]`, "missing"},
		{"url http", "POST", hooks, `{"url":"http://example.com/h","events":["call_started"]}`, `["body","url"]`, "url_scheme"},
		{"url relative", "POST", hooks, `{"url":"/hook","events":["call_started"]}`, `["body","url"]`, "url_parsing"},
		{"url spaces", "POST", hooks, `{"url":" https://example.com","events":["call_started"]}`, `["body","url"]`, "url_parsing"},
		{"url private", "POST", hooks, `{"url":"https://10.1.2.3/h","events":["call_started"]}`, `["body","url"]`, "url_forbidden_address"},
		{"relay with a url", "POST", hooks, `{"relay":true,"url":"https://example.com/h","events":["call_started"]}`, `["body","url"]`, "value_error"},
		{"max_delay below retry_delay", "POST", hooks, `{"url":"https://example.com/h","events":["call_started"],"retry_config":{"retry_delay":60,"max_delay":30}}`, `["body","retry_config","max_delay"]`, "value_error"},
		{"timestamp", "POST", ingest, `{"event":"call_ended","timestamp":"yesterday","data":{}}`, `["body","timestamp"]`, "datetime_parsing"},
		{"timestamp without a zone", "POST", ingest, `{"event":"call_ended","timestamp":"2026-01-02T03:04:05","data":{}}`, `["body","timestamp"]`, "datetime_parsing"},
		{"timestamp in year 0", "POST", ingest, `{"event":"call_ended","timestamp":"0000-01-01T00:00:00Z","data":{}}`, `["body","timestamp"]`, "datetime_range"},
		{"timestamp in year 9999", "POST", ingest, `{"event":"call_ended","timestamp":"9999-12-31T23:59:59Z","data":{}}`, `["body","timestamp"]`, "datetime_range"},
	} {
		refused(t, c)
	}
}

// Bodies the API took before take the schema's check too: nulls where
// the data's fields were optional, the sample data of every test
// delivery, a relay result of an unreachable receiver.
func TestSchemaTakesWhatTheHandlersTook(t *testing.T) {
	bodies := []struct {
		op   api.Operation
		body string
	}{
		{api.IngestEvent, `{"event":"call_started","data":{"call_id":null,"metadata":null,"extra":[1]}}`},
		{api.IngestEvent, `{"event":"conversation_ended","data":{"turn_count":null,"topics_discussed":null,"sentiment_analysis":{"sentiment_score":null}}}`},
		{api.IngestEvent, `{"event":"call_ended","timestamp":"2026-01-02T05:04:05+02:00","data":{"call_id":"c","duration_seconds":-12,"satisfaction_score":4.5}}`},
		{api.IngestEvent, `{"event":"system_error","data":{"anything":{"goes":true},"call_id":null}}`},
		{api.RelayResult, `{"token":"t.m","status_code":0,"error":"connection refused"}`},
		{api.RelayResult, `{"token":"t.m","status_code":100}`},
		{api.CreateWebhook, `{"url":"https://example.com/h","events":["call_started","call_started"],"secret":"` + strings.Repeat("é", 16) + `","retry_config":{"retry_on_status":[]}}`},
		{api.CreateWebhook, `{"relay":true,"events":["call_ended"],"retry_config":{"max_retries":0,"retry_delay":3600,"max_delay":86400,"retry_on_status":[300,599]}}`},
		{api.CreateWebhook, `{"name":"w","url":"https://example.com/hook","events":["call_started"]}`},
		{api.UpdateWebhook, `{}`},
	}
	for _, e := range domain.PlatformEvents {
		bodies = append(bodies, struct {
			op   api.Operation
			body string
		}{api.IngestEvent, fmt.Sprintf(`{"event":%q,"data":%s}`, e, domain.SampleData(e))})
	}
	for _, e := range domain.KnownEvents() {
		bodies = append(bodies, struct {
			op   api.Operation
			body string
		}{api.TestWebhook, fmt.Sprintf(`{"event_type":%q}`, e)})
	}
	for _, b := range bodies {
		r := httptest.NewRequest("POST", "/", strings.NewReader(b.body))
		if err := api.CheckBody(r, b.op); err != nil {
			t.Errorf("%s %s: %v", b.op.Name, b.body, err)
		}
		if b.op.Name == api.IngestEvent.Name {
			var in domain.IngestInput
			if err := json.Unmarshal([]byte(b.body), &in); err != nil {
				t.Fatal(err)
			}
			if err := integerLiterals(in.Event, in.Data); err != nil {
				t.Errorf("%s: %v", b.body, err)
			}
		}
	}
}

// The edge checks requests against the API's schemas; the domain's
// limits and names, which the dispatcher, the catalog and the handlers'
// own checks rely on, must say the same.
func TestSchemasSayTheDomainsLimits(t *testing.T) {
	num := func(v any) float64 {
		t.Helper()
		switch n := v.(type) {
		case int:
			return float64(n)
		case float64:
			return n
		}
		t.Fatalf("%v is not a number", v)
		return 0
	}
	apitest.WantInt(t, int(domain.MaxDelayMax), "RetryConfig", "properties", "max_delay", "maximum")
	apitest.WantInt(t, int(app.MaxRelayWait.Milliseconds()), "RelayPoll", "properties", "wait_ms", "maximum")
	apitest.WantInt(t, int(app.MaxRelayWait.Milliseconds()), "RelayPoll", "properties", "wait_ms", "default")
	enum := func(v any) []string {
		var out []string
		for _, e := range v.([]any) {
			out = append(out, e.(string))
		}
		return out
	}
	apitest.WantStrings(t, domain.KnownEvents(), "EventName", "enum")
	apitest.WantStrings(t, domain.PlatformEvents, "PlatformEventName", "enum")

	// The logs handler checks its query by hand, as the parameters say.
	doc, err := api.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Components struct {
			Parameters map[string]struct {
				Schema map[string]any `json:"schema"`
			} `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	params := d.Components.Parameters
	if got := params["limit"].Schema; num(got["minimum"]) != 1 || int(num(got["maximum"])) != app.MaxLogLimit {
		t.Errorf("limit: the parameter says %v, the handler 1..%d", got, app.MaxLogLimit)
	}
	if got := enum(params["log_status"].Schema["enum"]); !slices.Equal(got, []string{domain.LogSuccess, domain.LogFailed}) {
		t.Errorf("log status: the parameter says %v", got)
	}
	if got := params["log_event"].Schema["$ref"]; got != "#/components/schemas/EventName" {
		t.Errorf("log event: the parameter says %v", got)
	}

	// Ingestion checks each event's data against the schema the event
	// catalog serves for it.
	ingest := mustSchema(t, "EventIngest")
	checked := map[string]map[string]any{}
	for _, branch := range ingest["allOf"].([]any) {
		b := branch.(map[string]any)
		event := b["if"].(map[string]any)["properties"].(map[string]any)["event"].(map[string]any)
		data := b["then"].(map[string]any)["properties"].(map[string]any)["data"].(map[string]any)
		if name, ok := event["const"].(string); ok {
			checked[name] = data
			continue
		}
		for _, name := range enum(event["enum"]) {
			checked[name] = data
		}
	}
	ids := mustSchema(t, "PlatformEventData")
	for _, e := range domain.Catalog {
		if !domain.IsPlatformEvent(e.Name) {
			continue
		}
		want := ids // a free-form event's data: its ids are ids
		if e.DataSchema != "" {
			want = mustSchema(t, e.DataSchema)
		}
		if !reflect.DeepEqual(checked[e.Name], want) {
			t.Errorf("%s: ingestion checks its data against %v, the catalog serves %q", e.Name, checked[e.Name], e.DataSchema)
		}
	}
	if len(checked) != len(domain.PlatformEvents) {
		t.Errorf("ingestion checks the data of %d events, there are %d", len(checked), len(domain.PlatformEvents))
	}
}

// The secret's pattern says what the domain used to: no control
// character and no white space, in Unicode's sense.
func TestSecretPatternIsPrintableWithoutSpace(t *testing.T) {
	re := regexp.MustCompile(mustSchema(t, "WebhookSecret")["pattern"].(string))
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue // not in a Go string
		}
		want := !unicode.IsControl(r) && !unicode.IsSpace(r)
		if got := re.MatchString(string(r)); got != want {
			t.Fatalf("%U: the pattern says %v, want %v", r, got, want)
		}
	}
}

func mustSchema(t *testing.T, name string) map[string]any {
	t.Helper()
	return apitest.At(t, name).(map[string]any)
}

// FuzzCreateBody: a body the edge and the domain take always gives a
// webhook within the bounds the dispatcher relies on (README.md).
func FuzzCreateBody(f *testing.F) {
	for _, s := range []string{
		`{"url":"https://example.com/h","events":["call_started"]}`,
		`{"url":"https://example.com","events":["call_started"],"retry_config":{"max_retries":3,"retry_delay":2,"max_delay":10,"retry_on_status":[500]}}`,
		`{"url":"https://[::1]/","events":["x"]}`, `{"url":"http://127.0.0.1:1/","events":["call_ended"],"secret":"0123456789abcdef"}`,
		`{"relay":true,"events":["call_ended"],"Retry_Config":{"max_retries":1000000,"retry_delay":0}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := apitest.Decode[domain.Input](api.CreateWebhook, b)
		if err != nil {
			return
		}
		s, err := domain.ValidateCreate(in, func(h string) bool { return h == "127.0.0.1" })
		if err != nil {
			return
		}
		r := s.Retry
		if (s.URL == "") != s.Relay || len(s.Events) == 0 || len(s.Events) > 50 || r.MaxRetries < 0 || r.MaxRetries > 10 ||
			r.RetryDelay < 1 || r.RetryDelay > 3600 || r.MaxDelay < r.RetryDelay || r.MaxDelay > domain.MaxDelayMax || len(r.RetryOnStatus) > 20 {
			t.Fatalf("accepted out-of-bounds spec %+v", s)
		}
		for _, c := range r.RetryOnStatus {
			if c < 300 || c > 599 {
				t.Fatalf("accepted status %d", c)
			}
		}
		for _, e := range s.Events {
			if !domain.IsKnownEvent(e) {
				t.Fatalf("accepted unknown event %q", e)
			}
		}
		if s.Secret != "" && (utf8.RuneCountInString(s.Secret) < 16 || strings.ContainsFunc(s.Secret, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })) {
			t.Fatalf("accepted secret %q", s.Secret)
		}
	})
}

// FuzzIngestBody: a body the edge takes is published as a platform event
// whose data is an object.
func FuzzIngestBody(f *testing.F) {
	for _, s := range []string{
		`{"event":"call_ended","data":{"duration_seconds":12}}`,
		`{"event":"call_started","timestamp":"2026-01-02T03:04:05Z","data":{"metadata":{"call_queue":"q"}}}`,
		`{"event":"conversation_ended","data":{"topics_discussed":["a"],"sentiment_analysis":{"sentiment_score":1e3}}}`,
		`{"event":"call_ended","data":{},"EVENT":"ticket_created","Data":[]}`,
		`{"event":1}`, `[]`, `{"data":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := apitest.Decode[domain.IngestInput](api.IngestEvent, b)
		if err != nil {
			return
		}
		if integerLiterals(in.Event, in.Data) != nil {
			return
		}
		env, err := domain.ParseIngest(in, time.Unix(0, 0))
		var verrs apperr.ValidationErrors
		if errors.As(err, &verrs) && len(verrs) == 1 && fmt.Sprint(verrs[0].Loc) == "[body timestamp]" {
			return // a timestamp that is no date-time: the app's to refuse
		}
		if err != nil {
			t.Fatalf("a body the edge took refused: %v", err)
		}
		var data map[string]any
		if !domain.IsPlatformEvent(env.Event) || json.Unmarshal(env.Data, &data) != nil || data == nil {
			t.Fatalf("accepted envelope invalid: %+v", env)
		}
	})
}

// A test delivery's data is what the event catalog (GET
// /v1/voiceai/webhooks/events, the OpenAPI webhooks section) says that
// event's data is: every event with a data schema has a sample valid
// against it, so a receiver written against the catalog decodes a test
// delivery as it would a real one, and a new event cannot be added
// without a sample that matches.
func TestEverySampleMatchesItsCatalogSchema(t *testing.T) {
	for _, e := range domain.Catalog {
		sample := domain.SampleData(e.Name)
		if !json.Valid(sample) || sample[0] != '{' {
			t.Errorf("%s: the sample data is not a JSON object: %s", e.Name, sample)
			continue
		}
		if e.DataSchema == "" {
			continue // free-form
		}
		if err := api.CheckJSON(e.DataSchema, sample); err != nil {
			t.Errorf("%s: the sample data does not match %s: %v\n%s", e.Name, e.DataSchema, err, sample)
		}
	}
	// A cancelled invocation's sample is a cancelled invocation.
	var inv struct {
		Status      string `json:"status"`
		CompletedAt *int64 `json:"completed_at_unix_secs"`
		CancelledAt *int64 `json:"cancelled_at_unix_secs"`
	}
	if err := json.Unmarshal(domain.SampleData("test_invocation_cancelled"), &inv); err != nil || inv.Status != "cancelled" || inv.CompletedAt != nil || inv.CancelledAt == nil {
		t.Errorf("test_invocation_cancelled sample: %+v %v", inv, err)
	}
}
