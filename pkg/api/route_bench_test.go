package api

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gorilla/mux"
)

// BenchmarkRouteMatch matches a request against the gateway's table of
// every operation, for the first operation listed and the last.
func BenchmarkRouteMatch(b *testing.B) {
	r := mux.NewRouter()
	for _, op := range Operations {
		Route(r, op).Handler(http.NotFoundHandler())
	}
	first, last := Operations[0], Operations[len(Operations)-1]
	for _, op := range []Operation{first, last} {
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
