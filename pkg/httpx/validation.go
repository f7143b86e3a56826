package httpx

import (
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

// WriteValidation writes {"detail":[{loc,msg,type}]} with status 422.
func WriteValidation(w http.ResponseWriter, _ *http.Request, errs ValidationErrors) {
	WriteJSON(w, http.StatusUnprocessableEntity, struct {
		Detail ValidationErrors `json:"detail"`
	}{errs})
}
