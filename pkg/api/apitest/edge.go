package apitest

import (
	"bytes"
	"net/http"
	"net/http/httptest"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
)

// Edge checks body as a request for op meets it before its handler runs
// (op's request schema, within its body limit: api.CheckBody), and
// returns the request the handler would read.
func Edge(op api.Operation, body []byte) (*http.Request, error) {
	r := httpx.WithBodyLimit(httptest.NewRequest(op.Method, op.Path, bytes.NewReader(body)), op.BodyLimit())
	return r, api.CheckBody(r, op)
}

// Decode is body as op's handler decodes it after Edge: the error is the
// first refusal, the edge's or the decoder's.
func Decode[T any](op api.Operation, body []byte) (T, error) {
	var in T
	r, err := Edge(op, body)
	if err != nil {
		return in, err
	}
	err = httpx.DecodeJSON(r, &in)
	return in, err
}
