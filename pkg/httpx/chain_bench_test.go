package httpx_test

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/obs"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// The middlewares every request passes twice, at the gateway and at its
// service, with the production logger (JSON, through the trace handler)
// writing nowhere: the gateway logs each request at info, a service at
// debug, which it does not write.
func BenchmarkMiddlewareChain(b *testing.B) {
	log := obs.NewLogger(io.Discard, slog.LevelInfo, "bench")
	done := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	chains := []struct {
		name    string
		handler http.Handler
		caller  bool
	}{
		{"gateway", httpx.WithRequestID(log, httpx.WithTraceparent(httpx.Recover(httpx.AccessLog(done)))), false},
		{"service", httpx.WithRequestID(log, httpx.WithTraceparent(httpx.Recover(httpx.AccessLogAt(slog.LevelDebug, httpx.WithPrincipal(done))))), true},
	}
	for _, c := range chains {
		b.Run(c.name, func(b *testing.B) {
			w := &discard{header: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				r, _ := http.NewRequest(http.MethodGet, "/v1/convai/agents/agent_1", http.NoBody)
				r.Header.Set(httpx.HeaderRequestID, "req_0123456789abcdef01234567")
				r.Header.Set(httpx.HeaderTraceparent, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")
				if c.caller {
					principal.Principal{WorkspaceID: "ws_1", UserID: "u_1", KeyID: "k_1", Permissions: []string{"all"}}.SetHeaders(r.Header)
				}
				clear(w.header)
				c.handler.ServeHTTP(w, r)
			}
		})
	}
}

type discard struct{ header http.Header }

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}
