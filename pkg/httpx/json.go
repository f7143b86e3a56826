package httpx

import (
	"encoding/json"
	"net/http"
)

// WriteJSON writes v as a JSON response with status httpStatus: the one
// encoding of every answer, an error's or a handler's (api.Handle).
func WriteJSON(w http.ResponseWriter, httpStatus int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatus)
	_ = json.NewEncoder(w).Encode(v)
}
