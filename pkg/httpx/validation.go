package httpx

import (
	"fmt"
	"net/http"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// The edge's names for the catalog's validation types (package apperr).
type (
	FieldError       = apperr.FieldError
	ValidationErrors = apperr.ValidationErrors
	Validator        = apperr.Validator
)

// IDMessage explains the id grammar to a caller.
const IDMessage = apperr.IDMessage

// MaxListedErrors bounds the entries of a 422: a small body of many
// wrong items (5,000 empty turns) would otherwise be answered 50 times
// its size.
const MaxListedErrors = 100

// WriteValidation writes {"detail":[{loc,msg,type}]} with status 422:
// the first MaxListedErrors, then one entry saying how many more there
// are, at the place the next one is.
func WriteValidation(w http.ResponseWriter, _ *http.Request, errs ValidationErrors) {
	if len(errs) > MaxListedErrors {
		more := FieldError{Loc: errs[MaxListedErrors].Loc, Type: "too_many_errors",
			Msg: fmt.Sprintf("%d more errors not listed; correct those above and send it again", len(errs)-MaxListedErrors)}
		errs = append(errs[:MaxListedErrors:MaxListedErrors], more)
	}
	WriteJSON(w, http.StatusUnprocessableEntity, struct {
		Detail ValidationErrors `json:"detail"`
	}{errs})
}
