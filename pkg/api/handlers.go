package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// A handler that only binds a use case to its operation is one of these:
// the caller (CallerOf), the resource the path names (PathID) and the
// JSON body are the use case's arguments, and what it gives is answered.

// PathID is the id of the resource r's path names: its operation's last
// path variable.
func PathID(r *http.Request) string {
	op, _ := r.Context().Value(opKey{}).(Operation)
	open, end := strings.LastIndexByte(op.Path, '{'), strings.LastIndexByte(op.Path, '}')
	if open < 0 || end < open {
		return ""
	}
	return mux.Vars(r)[op.Path[open+1:end]]
}

// Command runs do for the request's caller on its JSON body, and answers
// what it gives as view with code (httpx.Command).
func Command[In, Out, V any](w http.ResponseWriter, r *http.Request, code int, do func(context.Context, principal.Caller, In) (Out, error), view func(Out) V) error {
	return httpx.Command(w, r, code, func(in In) (Out, error) { return do(r.Context(), CallerOf(r), in) }, view)
}

// CommandOn is Command on the resource the path names.
func CommandOn[In, Out, V any](w http.ResponseWriter, r *http.Request, code int, do func(context.Context, principal.Caller, string, In) (Out, error), view func(Out) V) error {
	return httpx.Command(w, r, code, func(in In) (Out, error) { return do(r.Context(), CallerOf(r), PathID(r), in) }, view)
}

// Remove runs do for the request's caller on the resource the path names,
// and answers 204.
func Remove(w http.ResponseWriter, r *http.Request, do func(context.Context, principal.Caller, string) error) error {
	return httpx.NoContent(w, do(r.Context(), CallerOf(r), PathID(r)))
}
