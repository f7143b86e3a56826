package apperr

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/voiceai-platform/voiceai/pkg/ids"
)

// FieldError is one entry of a 422 body: where, what, and a stable type.
type FieldError struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// ValidationErrors is a 422 response waiting to be written.
type ValidationErrors []FieldError

// IdempotencyKeyReused refuses a request sent under an Idempotency-Key
// that first went with another request (another path, query or body):
// answering it with the first request's result would say it was done.
// 422, as the IETF's Idempotency-Key draft has it.
var IdempotencyKeyReused = ValidationErrors{{
	Loc:  []any{"header", "Idempotency-Key"},
	Msg:  "This Idempotency-Key was first used for another request (another path, query or body): send a new key with a new request",
	Type: "idempotency_key_reused",
}}

func (v ValidationErrors) Error() string {
	parts := make([]string, 0, len(v))
	for _, f := range v {
		parts = append(parts, f.Msg)
	}
	return "validation failed: " + strings.Join(parts, "; ")
}

// Validator collects field errors while a handler checks its input.
type Validator struct{ errs ValidationErrors }

// Add records a failure at loc (e.g. "body", "tests", 0, "test_id").
func (v *Validator) Add(msg, typ string, loc ...any) {
	v.errs = append(v.errs, FieldError{Loc: loc, Msg: msg, Type: typ})
}

// Check records a failure when ok is false.
func (v *Validator) Check(ok bool, msg, typ string, loc ...any) {
	if !ok {
		v.Add(msg, typ, loc...)
	}
}

// Err returns the collected errors, or nil when there are none.
func (v *Validator) Err() error {
	if len(v.errs) == 0 {
		return nil
	}
	return v.errs
}

// ID records a failure at loc unless id follows the id grammar (pkg/ids),
// and reports whether it does. Every id a caller sends in a body or a
// query is checked so before it can reach a subject, a key or a store.
func (v *Validator) ID(id string, loc ...any) bool {
	if ids.Valid(id) {
		return true
	}
	v.Add(IDMessage, "string_pattern_mismatch", loc...)
	return false
}

// InvalidCursor answers a cursor that was tampered with or issued for
// other filters: every listing's one answer.
func InvalidCursor() error {
	return ValidationErrors{{Loc: []any{"query", "cursor"}, Msg: CursorMessage, Type: "value_error"}}
}

// CursorMessage explains a refused cursor.
const CursorMessage = "Invalid cursor: it is corrupted or belongs to other filters"

// IDMessage explains the id grammar to a caller.
const IDMessage = "Input should be an id: 1 to 128 letters, digits, '_' or '-'"

// BoundStrings adds a failure for every string in the JSON document doc
// (values and object keys alike) longer than max characters, at its path
// below loc: one bound for every string field of a free-form document.
func (v *Validator) BoundStrings(doc []byte, max int, loc ...any) {
	var root any
	if len(doc) == 0 || json.Unmarshal(doc, &root) != nil {
		return // malformed bodies are refused by the decoder
	}
	var walk func(x any, loc []any)
	walk = func(x any, loc []any) {
		switch x := x.(type) {
		case string:
			if utf8.RuneCountInString(x) > max {
				v.Add(fmt.Sprintf("String should have at most %d characters", max), "string_too_long", loc...)
			}
		case []any:
			for i, e := range x {
				walk(e, append(slices.Clip(loc), i))
			}
		case map[string]any:
			for k, e := range x {
				if utf8.RuneCountInString(k) > max {
					v.Add(fmt.Sprintf("Key should have at most %d characters", max), "string_too_long", loc...)
				}
				walk(e, append(slices.Clip(loc), k))
			}
		}
	}
	walk(root, slices.Clip(loc))
}
