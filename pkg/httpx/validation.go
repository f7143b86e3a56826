package httpx

import (
	"net/http"
	"strings"
)

// FieldError is one entry of a 422 body: where, what, and a stable type.
type FieldError struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// ValidationErrors is a 422 response waiting to be written.
type ValidationErrors []FieldError

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

// WriteValidation writes {"detail":[{loc,msg,type}]} with status 422.
func WriteValidation(w http.ResponseWriter, _ *http.Request, errs ValidationErrors) {
	WriteJSON(w, http.StatusUnprocessableEntity, struct {
		Detail ValidationErrors `json:"detail"`
	}{errs})
}
