// Package apperr is the catalog of application errors: what went wrong,
// by kind (not found, conflict, invalid with the fields at fault,
// forbidden, unavailable…), with a stable snake_case status and a message
// for the caller. domain and app return these and know nothing of HTTP;
// the edge (pkg/httpx) alone turns a kind into a status code and the
// spec's error body.
package apperr

import "errors"

// Kind is what kind of failure an error is; each has one HTTP status at
// the edge.
type Kind string

// The kinds.
const (
	Invalid         Kind = "invalid"          // the request is malformed as a whole (400); fields at fault are ValidationErrors (422)
	Unauthenticated Kind = "unauthenticated"  // no valid credentials (401)
	Forbidden       Kind = "forbidden"        // the caller may not (403)
	NotFound        Kind = "not_found"        // nothing has this id here (404)
	Conflict        Kind = "conflict"         // the state forbids it, or it changed meanwhile (409)
	TooLarge        Kind = "too_large"        // the request is too big (413)
	Unsupported     Kind = "unsupported"      // a representation not offered (406)
	UnsupportedBody Kind = "unsupported_body" // a body in an encoding not read (415)
	WrongMethod     Kind = "wrong_method"     // the route exists, not for this method (405)
	RateLimited     Kind = "rate_limited"     // too many requests (429)
	Unavailable     Kind = "unavailable"      // a dependency is briefly unavailable; retry (503)
	Internal        Kind = "internal"         // a bug or an unexpected failure (500)
	Upstream        Kind = "upstream"         // a service behind the edge failed or answered nonsense (502)
	UpstreamTimeout Kind = "upstream_timeout" // a service behind the edge did not answer in time (504)
)

// Kinds are every kind, for the edge's mapping and its test.
var Kinds = []Kind{Invalid, Unauthenticated, Forbidden, NotFound, Conflict, TooLarge, Unsupported, UnsupportedBody, WrongMethod,
	RateLimited, Unavailable, Internal, Upstream, UpstreamTimeout}

// Error is an application error: its kind, a stable status identifier
// (e.g. "agent_not_found") and a customer-facing message.
type Error struct {
	Kind    Kind
	Status  string
	Message string
}

func (e *Error) Error() string { return e.Status + ": " + e.Message }

// New builds an application error.
func New(kind Kind, status, message string) *Error {
	return &Error{Kind: kind, Status: status, Message: message}
}

// Constructors for the common kinds.
func NotFoundError(status, message string) *Error  { return New(NotFound, status, message) }
func ConflictError(status, message string) *Error  { return New(Conflict, status, message) }
func ForbiddenError(status, message string) *Error { return New(Forbidden, status, message) }
func InvalidError(status, message string) *Error   { return New(Invalid, status, message) }

// KindOf is err's kind: an *Error's, Invalid for ValidationErrors,
// Internal for anything else.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	var v ValidationErrors
	if errors.As(err, &v) {
		return Invalid
	}
	return Internal
}

// Is reports whether err is an application error of kind.
func Is(err error, kind Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == kind
}
