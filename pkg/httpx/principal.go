package httpx

import (
	"net/http"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// WithPrincipal puts the principal the gateway forwarded into the request
// context and refuses requests that arrive without one (they did not come
// through the gateway).
func WithPrincipal(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := principal.FromHeaders(r.Header)
		if !ok {
			WriteError(w, r, apperr.NotAuthenticated)
			return
		}
		NoteCaller(r.Context(), p.WorkspaceID, p.KeyID)
		next.ServeHTTP(w, r.WithContext(principal.With(r.Context(), p)))
	})
}
