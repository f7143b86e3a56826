// Package requestid carries a request's id in a context: the edge puts it
// there (see httpx.WithRequestID), and what the request causes (events,
// forwarded requests, error bodies) reads it. It links nothing, so the
// use-case layers that stamp events with it stay free of the HTTP edge.
package requestid

import "context"

type ctxKey struct{}

// With returns ctx carrying the request id id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// From returns the request id ctx carries, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}
