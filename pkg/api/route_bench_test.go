package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// BenchmarkRouteMatch matches a request against the gateway's table of
// every operation, for the first operation listed, the ticket create the
// bench's clients send, and the last.
func BenchmarkRouteMatch(b *testing.B) {
	r := mux.NewRouter()
	for _, op := range Operations {
		Route(r, op).Handler(http.NotFoundHandler())
	}
	first, last := Operations[0], Operations[len(Operations)-1]
	for _, op := range []Operation{first, CreateAgentTicket, last} {
		req := httptest.NewRequest(op.Method, exampleURL(op.Path), nil)
		b.Run(op.Name, func(b *testing.B) {
			var m mux.RouteMatch
			for b.Loop() {
				if !r.Match(req, &m) {
					b.Fatal("no match")
				}
			}
		})
	}
}

// exampleURL fills template's variables with a well-formed id.
func exampleURL(template string) string {
	out, in := []byte{}, false
	for _, c := range []byte(template) {
		switch {
		case c == '{':
			in = true
			out = append(out, "id_1"...)
		case c == '}':
			in = false
		case !in:
			out = append(out, c)
		}
	}
	return string(out)
}

// BenchmarkHandleKeyedCreate serves a keyed ticket create on an agent through the
// edge's checks to a handler that decodes its body: what every write
// pays before its use case runs.
func BenchmarkHandleKeyedCreate(b *testing.B) {
	r := mux.NewRouter()
	Handle(r, CreateAgentTicket, func(c *Call) (any, error) {
		var in struct {
			Title  string   `json:"title"`
			Labels []string `json:"labels"`
		}
		return nil, c.Body(&in)
	})
	const body = `{"title":"Caller was put on hold twice","qa_comment":"The agent looped on the refund policy.","priority":"high","issue_type":"knowledge_gap","labels":["refunds","hold"]}`
	ctx := principal.With(context.Background(), principal.Principal{WorkspaceID: "ws_a", UserID: "u1", Permissions: []string{"all"}})
	for b.Loop() {
		req := httptest.NewRequestWithContext(ctx, CreateAgentTicket.Method, exampleURL(CreateAgentTicket.Path), strings.NewReader(body))
		req.Header.Set(HeaderIdempotencyKey, "key-1")
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		if rec.Code/100 != 2 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}
