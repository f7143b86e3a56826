package llm

import (
	"errors"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParseResponse(t *testing.T) {
	cases := []struct {
		name string
		body string
		want ChatResponse
		err  error
	}{
		{
			name: "openai text",
			body: `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini-2024-07-18",
				"choices":[{"index":0,"message":{"role":"assistant","content":"Hi!","refusal":null},"logprobs":null,"finish_reason":"stop"}],
				"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0}}}`,
			want: ChatResponse{Message: Message{Role: "assistant", Content: "Hi!"}, FinishReason: "stop",
				Usage: Usage{9, 3, 12}, Model: "gpt-4o-mini-2024-07-18"},
		},
		{
			name: "tool calls with null content",
			body: `{"model":"m","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
				{"id":"call_x","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}]}`,
			want: ChatResponse{Message: Message{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_x", Name: "f", Arguments: `{"a":1}`}}},
				FinishReason: "tool_calls", Model: "m"},
		},
		{
			name: "arguments as an object, missing ids, no role (lenient servers)",
			body: `{"choices":[{"message":{"tool_calls":[{"function":{"name":"f","arguments":{"a": [1, 2]}}},{"function":{"name":"g"}}]},"finish_reason":null}]}`,
			want: ChatResponse{Message: Message{Role: "assistant", ToolCalls: []ToolCall{
				{ID: "call_0", Name: "f", Arguments: `{"a":[1,2]}`}, {ID: "call_1", Name: "g"},
			}}},
		},
		{
			name: "content as parts, reasoning, usage without total",
			body: `{"model":"qwen","choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}],
				"reasoning_content":"thinking..."},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
			want: ChatResponse{Message: Message{Role: "assistant", Content: "ab"}, FinishReason: "length",
				Usage: Usage{5, 2, 7}, Model: "qwen", Reasoning: "thinking..."},
		},
		{
			name: "ollama reasoning, malformed usage ignored",
			body: `{"model":"llama3","choices":[{"message":{"role":"assistant","content":"x","reasoning":"hmm"},"finish_reason":"stop"}],"usage":"n/a"}`,
			want: ChatResponse{Message: Message{Role: "assistant", Content: "x"}, FinishReason: "stop", Model: "llama3", Reasoning: "hmm"},
		},
		{name: "not json", body: `<html>`, err: ErrMalformedResponse},
		{name: "empty", body: ``, err: ErrMalformedResponse},
		{name: "truncated", body: `{"choices":[{"message":{"content":"ab`, err: ErrMalformedResponse},
		{name: "sse", body: "data: {\"choices\":[]}\n\ndata: [DONE]\n", err: ErrMalformedResponse},
		{name: "array top level", body: `[]`, err: ErrMalformedResponse},
		{name: "content number", body: `{"choices":[{"message":{"content":5}}]}`, err: ErrMalformedResponse},
		{name: "choice without message", body: `{"choices":[{"delta":{"content":"x"}}]}`, err: ErrMalformedResponse},
		{name: "choices not an array", body: `{"choices":{}}`, err: ErrMalformedResponse},
		{name: "zero choices", body: `{"choices":[]}`, err: ErrNoChoices},
		{name: "no choices field", body: `{}`, err: ErrNoChoices},
		{name: "error in a 200", body: `{"error":{"message":"upstream failed","code":502}}`, err: ErrNoChoices},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseResponse([]byte(tc.body))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if _, err := parseResponse([]byte(`{"error":{"message":"upstream failed"}}`)); err == nil || !strings.Contains(err.Error(), "upstream failed") {
		t.Errorf("err = %v, want the server's message", err)
	}
}

func TestParseAPIError(t *testing.T) {
	h := http.Header{}
	cases := []struct {
		name   string
		status int
		body   string
		want   APIError
	}{
		{"openai", 401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			APIError{StatusCode: 401, Type: "invalid_request_error", Code: "invalid_api_key", Message: "Incorrect API key provided"}},
		{"numeric code", 400, `{"error":{"message":"bad","type":"BadRequestError","code":400}}`,
			APIError{StatusCode: 400, Type: "BadRequestError", Code: "400", Message: "bad"}},
		{"null code", 429, `{"error":{"message":"slow","type":"requests","code":null}}`,
			APIError{StatusCode: 429, Type: "requests", Message: "slow"}},
		{"ollama", 404, `{"error":"model \"llama9\" not found, try pulling it first"}`,
			APIError{StatusCode: 404, Message: `model "llama9" not found, try pulling it first`}},
		{"old vllm", 400, `{"object":"error","message":"max_tokens too large","type":"BadRequestError","param":null,"code":400}`,
			APIError{StatusCode: 400, Type: "BadRequestError", Code: "400", Message: "max_tokens too large"}},
		{"fastapi detail", 422, `{"detail":[{"loc":["body","messages"],"msg":"field required"}]}`,
			APIError{StatusCode: 422, Message: `[{"loc":["body","messages"],"msg":"field required"}]`}},
		{"html", 502, "<html><body>502 Bad Gateway</body></html>\n",
			APIError{StatusCode: 502, Message: "<html><body>502 Bad Gateway</body></html>"}},
		{"empty", 503, "", APIError{StatusCode: 503, Message: "Service Unavailable"}},
		{"error null", 500, `{"error":null}`, APIError{StatusCode: 500, Message: `{"error":null}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := parseAPIError(tc.status, h, []byte(tc.body), time.Now())
			if *got != tc.want {
				t.Errorf("\n got %+v\nwant %+v", *got, tc.want)
			}
		})
	}
	long := parseAPIError(500, h, []byte(strings.Repeat("é", 5000)), time.Now())
	if len(long.Message) > 1100 || !utf8.ValidString(long.Message) {
		t.Errorf("long message not truncated cleanly: %d bytes", len(long.Message))
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		headers map[string]string
		want    time.Duration
		ok      bool
	}{
		{map[string]string{}, 0, false},
		{map[string]string{"Retry-After": "2"}, 2 * time.Second, true},
		{map[string]string{"Retry-After": "0"}, 0, true},
		{map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"Retry-After": "-3"}, 0, false},
		{map[string]string{"Retry-After": "NaN"}, 0, false},
		{map[string]string{"Retry-After": "1e300"}, maxRetryAfter, true},
		{map[string]string{"retry-after-ms": "250"}, 250 * time.Millisecond, true},
		{map[string]string{"retry-after-ms": "12.5"}, 12500 * time.Microsecond, true},
		{map[string]string{"retry-after-ms": "40", "Retry-After": "3"}, 40 * time.Millisecond, true},
		{map[string]string{"retry-after-ms": "junk", "Retry-After": "3"}, 3 * time.Second, true},
		{map[string]string{"retry-after-ms": "Inf"}, 0, false},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.headers {
			h.Set(k, v)
		}
		got, ok := retryAfter(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%v) = %s, %v; want %s, %v", tc.headers, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTokenCount(t *testing.T) {
	for in, want := range map[float64]int{-1: 0, 0: 0, 3: 3, 3.9: 3, math.NaN(): 0, math.Inf(1): math.MaxInt32, 1e300: math.MaxInt32} {
		if got := tokenCount(in); got != want {
			t.Errorf("tokenCount(%v) = %d, want %d", in, got, want)
		}
	}
}

// Tool-call arguments sent as a JSON object are text of the call: valid
// UTF-8 whatever bytes the endpoint put in them (Compact does not check),
// so that a run's result holding them can be stored.
func TestToolArgumentsAsAnObjectAreValidUTF8(t *testing.T) {
	got, err := parseResponse([]byte("{\"choices\":[{\"message\":{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\"," +
		"\"function\":{\"name\":\"book_table\",\"arguments\":{\"guests\":4,\"note\":\"\xff\"}}}]}}]}"))
	if err != nil {
		t.Fatal(err)
	}
	if calls := got.Message.ToolCalls; len(calls) != 1 || !utf8.ValidString(calls[0].Arguments) || !strings.Contains(calls[0].Arguments, `"guests":4`) {
		t.Fatalf("%+v", got.Message.ToolCalls)
	}
}
