package testkit

import (
	"context"
	"io"
	"net/http"
	"strings"
)

// APIRequest is a request to the platform's API as the tests send them:
// body as its body (none when empty), key as its x-api-key (none when
// empty) and headers as name, value pairs.
func APIRequest(ctx context.Context, method, url, key, body string, headers ...string) (*http.Request, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req, nil
}
