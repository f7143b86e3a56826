package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// Route adds op's path and method to r (HEAD too where the method is GET:
// net/http drops the body of a HEAD answer), behind a matcher that
// compares the request's path with op's template segment by segment. The
// router tries its routes in turn, each with a regular expression (88 at
// the gateway, many sharing a prefix): the matcher turns down every route
// but the one the path names for a fraction of the cost, so the
// expression runs once a request, only to read the variables.
func Route(r *mux.Router, op Operation) *mux.Route {
	methods := []string{op.Method}
	if op.Reads() {
		methods = append(methods, http.MethodHead)
	}
	return r.MatcherFunc(segmentsOf(op.Path).match).Path(op.Path).Methods(methods...)
}

// segments is a path template: the literal prefix up to its first
// variable, then the rest cut at its slashes, each variable written "{}".
// A variable is a whole segment and matches any non-empty one (mux's
// default pattern, [^/]+).
type segments struct {
	prefix string
	rest   []string // nil: the template is its prefix
}

const variable = "{}"

func segmentsOf(template string) segments {
	prefix, _, hasVar := strings.Cut(template, "{")
	if !hasVar {
		return segments{prefix: template}
	}
	rest := strings.Split(template[len(prefix):], "/")
	for i, seg := range rest {
		if strings.ContainsAny(seg, "{}") {
			if seg[0] != '{' || seg[len(seg)-1] != '}' || strings.ContainsAny(seg[1:len(seg)-1], "{}:") {
				// A pattern or a variable within a segment: not one this
				// matcher reads, and not one the table uses.
				panic("api: path template " + template + " has a variable that is not a whole segment of the default pattern")
			}
			rest[i] = variable
		} else if seg == "" {
			panic("api: path template " + template + " has an empty segment")
		}
	}
	if !strings.HasSuffix(prefix, "/") {
		panic("api: path template " + template + " has a variable that is not a whole segment")
	}
	return segments{prefix: prefix, rest: rest}
}

// match accepts exactly the paths the route's expression does. Most
// routes turn a path down at the prefix.
func (s segments) match(r *http.Request, _ *mux.RouteMatch) bool {
	path := r.URL.Path
	if s.rest == nil {
		return path == s.prefix
	}
	if !strings.HasPrefix(path, s.prefix) {
		return false
	}
	path = path[len(s.prefix):]
	for i, seg := range s.rest {
		part, rest, cut := strings.Cut(path, "/")
		if cut == (i == len(s.rest)-1) { // a slash after the last segment, or none before the next
			return false
		}
		if seg == variable {
			if part == "" {
				return false
			}
		} else if part != seg {
			return false
		}
		path = rest
	}
	return true
}

// Handle serves op on a service's router: the caller must hold one of
// op's permissions (403), every path id must follow the id grammar (else
// the id's 404, as for an unknown one), an Idempotency-Key must be well
// formed and the body must follow op's request schema (422), all before h
// runs; h reads a body of up to op's MaxBody. What h returns is answered
// here, the one place a handler's answer or error becomes HTTP.
func Handle(r *mux.Router, op Operation, h HandlerFunc) {
	Route(r, op).HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c := &Call{r: req.WithContext(httpx.ContextWithBodyLimit(context.WithValue(req.Context(), opKey{}, op), op.BodyLimit())), op: op}
		err := c.check()
		var out any
		if err == nil {
			out, err = h(c)
		}
		if err != nil {
			httpx.WriteError(w, c.r, err)
			return
		}
		answer(w, c.r, op, out)
	})
}

// check is the edge's half of a call, before its handler runs. The body
// is read here once, for each of its readers (a keyed write's digest,
// the schema check, the handler), where one of the first two needs it;
// a body the handler's read refuses (unreadable, too large, empty) is
// refused when the handler reads it, as the handler may take none.
func (c *Call) check() error {
	if err := principal.Require(c.r, c.op.Perms...); err != nil {
		return err
	}
	if err := CheckRequest(c.r); err != nil {
		return err
	}
	if err := CheckQuery(c.r, c.op); err != nil {
		return err
	}
	keyed := !c.op.Reads() && c.r.Header.Get(HeaderIdempotencyKey) != ""
	if c.r.Body == nil || (!keyed && c.op.Request == "") {
		if keyed {
			c.r = withRequestDigest(c.r, nil)
		}
		return nil
	}
	raw, err := httpx.ReadBodyAsSent(c.r.Body, c.op.BodyLimit())
	c.body = &sentBody{data: raw, err: err}
	if keyed {
		c.r = withRequestDigest(c.r, raw)
	}
	if err != nil || c.op.Request == "" {
		return nil
	}
	c.body.data, err = checkBody(raw, c.op)
	c.body.checked = err == nil
	return err
}

// sentBody is a request's body as the edge read it.
type sentBody struct {
	data    []byte // as the handler reads it: checked, with what the schema drops dropped
	err     error  // what the handler's read of it answers
	checked bool   // its values are checked (apperr.CheckJSONValues)
}

type opKey struct{}

// CheckRequest checks what a caller put in the request line and headers
// of a matched route: its path ids, its query, its Idempotency-Key and
// the coding of its body.
func CheckRequest(r *http.Request) error {
	for name, v := range mux.Vars(r) {
		if ids.Valid(v) {
			continue
		}
		if p, ok := IDParams[name]; ok {
			return p.NotFound
		}
		return apperr.ResourceNotFound
	}
	if err := checkQueryBounds(r); err != nil {
		return err
	}
	// A key sent empty (a client's unset variable) or twice is refused,
	// not taken for none: the write would lose its safety to be retried
	// without the client knowing.
	if keys := r.Header.Values(HeaderIdempotencyKey); len(keys) > 1 || len(keys) == 1 && !validIdempotencyKey(keys[0]) {
		return httpx.ValidationErrors{{Loc: []any{"header", HeaderIdempotencyKey},
			Msg:  "An idempotency key is one header of 1 to 255 visible ASCII characters.",
			Type: "value_error"}}
	}
	// A write's body is read as sent: gzipped, it would be answered as
	// malformed JSON; a coding only named would be passed over. (A read
	// has no body to code.)
	if c := r.Header.Get("Content-Encoding"); c != "" && r.Method != http.MethodGet && r.Method != http.MethodHead &&
		!strings.EqualFold(strings.TrimSpace(c), "identity") {
		return apperr.UnsupportedContentEncoding(c)
	}
	return nil
}

// MaxQueryValueLen bounds every query parameter's value.
const MaxQueryValueLen = 1024

// QueryIDParams are the query parameters that name one resource to be
// read, by the path variable that names that kind: a malformed value is
// answered as an unknown one (404), as in a path, not as a 422.
var QueryIDParams = map[string]string{
	"baseline_invocation_id": "invocation_id",
}

// checkQueryBounds checks every query value, documented or not (their
// schemas are CheckQuery's): each at most MaxQueryValueLen bytes, and
// each parameter named *_id an id (or empty, or "@me" where a user id may
// name the caller).
func checkQueryBounds(r *http.Request) error {
	// A pair the query parser cannot read (a ";" separator, a bad escape
	// such as %zz) would be dropped without a word, and the request
	// answered as if that parameter were not there.
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		return httpx.ValidationErrors{{Loc: []any{"query"}, Msg: "Input should be a well-formed query string: " + err.Error(), Type: "value_error"}}
	}
	for name, values := range r.URL.Query() {
		for _, v := range values {
			switch {
			case len(v) > MaxQueryValueLen:
				return httpx.ValidationErrors{{Loc: []any{"query", name}, Msg: "Input should have at most 1024 bytes", Type: "string_too_long"}}
			case QueryIDParams[name] != "" && v != "" && !ids.Valid(v):
				return IDParams[QueryIDParams[name]].NotFound
			case strings.HasSuffix(name, "_id") && v != "" && v != "@me" && !ids.Valid(v):
				return httpx.ValidationErrors{{Loc: []any{"query", name}, Msg: httpx.IDMessage, Type: "string_pattern_mismatch"}}
			case !utf8.ValidString(v) || strings.ContainsRune(v, 0):
				// As a body's string is refused: a search for such bytes
				// would reach the stores as the caller never meant. (An id
				// is answered above, as any malformed id is.)
				return httpx.ValidationErrors{{Loc: []any{"query", name}, Msg: "Input should be valid UTF-8 text, without NUL", Type: "string_unicode"}}
			}
		}
	}
	return nil
}

// HeaderIdempotencyKey makes a create (or another command) safe to retry.
const HeaderIdempotencyKey = "Idempotency-Key"

// MaxIdempotencyKeyLen bounds an Idempotency-Key, as Stripe does.
const MaxIdempotencyKeyLen = 255

func validIdempotencyKey(k string) bool {
	if k == "" || len(k) > MaxIdempotencyKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// CommandID is the request's Idempotency-Key made unique to its workspace
// and operation: the same key sent by another workspace, or to another
// operation, is another command. "" when the request has no key. The id
// is a fixed-length hash, safe as a NATS message id whatever the key.
func CommandID(r *http.Request) string {
	k := r.Header.Get(HeaderIdempotencyKey)
	if k == "" {
		return ""
	}
	op, _ := r.Context().Value(opKey{}).(Operation)
	p, _ := principal.From(r.Context())
	return commandID(p.WorkspaceID, op.Name, k)
}

// withRequestDigest gives a keyed write's context the fingerprint of the
// request as sent (esproto.WithRequestDigest): its method, path, query
// and body. The events its command records carry it, so that the same
// key sent with another request is told from a replay of this one.
func withRequestDigest(r *http.Request, body []byte) *http.Request {
	h := sha256.New()
	h.Write([]byte(r.Method + " " + r.URL.EscapedPath() + "?" + r.URL.RawQuery + "\n"))
	h.Write(body)
	return r.WithContext(esproto.WithRequestDigest(r.Context(), hex.EncodeToString(h.Sum(nil)[:16])))
}

// CallerOf is who sends r, and its command id (CommandID).
func CallerOf(r *http.Request) principal.Caller {
	return principal.Caller{Principal: principal.Of(r), CommandID: CommandID(r)}
}

func commandID(workspace, operation, key string) string {
	h := sha256.Sum256([]byte(workspace + "\x00" + operation + "\x00" + key))
	return "cmd_" + hex.EncodeToString(h[:16])
}
