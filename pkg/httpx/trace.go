package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"regexp"
)

// HeaderTraceparent is the W3C trace-context header.
const HeaderTraceparent = "Traceparent"

type traceKey struct{}

var wellFormedTraceparent = regexp.MustCompile(`^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

// WithTraceparent keeps a well-formed incoming traceparent, or starts a
// trace, so every event a request causes can be tied back to it.
func WithTraceparent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tp := r.Header.Get(HeaderTraceparent)
		if !wellFormedTraceparent.MatchString(tp) {
			tp = NewTraceparent()
			r.Header.Set(HeaderTraceparent, tp)
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), traceKey{}, tp)))
	})
}

// NewTraceparent starts a new sampled trace.
func NewTraceparent() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "00-" + hex.EncodeToString(b[:16]) + "-" + hex.EncodeToString(b[16:]) + "-01"
}

// Traceparent returns the request's traceparent, or "".
func Traceparent(ctx context.Context) string {
	tp, _ := ctx.Value(traceKey{}).(string)
	return tp
}
