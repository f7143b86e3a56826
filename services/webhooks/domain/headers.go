package domain

import (
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// Bounds of a webhook's request_headers, the headers sent with each of its
// deliveries.
const (
	MaxRequestHeaders     = 20
	MaxRequestHeaderName  = 128
	MaxRequestHeaderValue = 1024
	MaxRequestHeadersSize = 8 << 10 // names and values together
)

// HiddenHeaderValue is how a stored request header's value is shown: the
// values often carry the receiver's credentials (Authorization, an API
// key), and every key that may read webhooks would read them. Sent back
// in an update, it keeps the stored value.
const HiddenHeaderValue = "********"

// HideHeaderValues is headers with every value shown as HiddenHeaderValue.
func HideHeaderValues(headers map[string]string) map[string]string {
	out := make(map[string]string, len(headers))
	for name := range headers {
		out[name] = HiddenHeaderValue
	}
	return out
}

// reservedHeaders are the headers a webhook's own can never set: the
// platform's signatures and delivery headers, the body's description, the
// destination, and what the HTTP client manages itself.
var reservedHeaders = []string{
	"host", "content-type", "content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive",
	"te", "trailer", "upgrade", "expect", "user-agent", "traceparent", "tracestate",
	"elevenlabs-signature", "webhook-id", "webhook-timestamp", "webhook-signature",
}

// ReservedHeader reports whether name (any case) is one the platform sets
// or the transport manages: those, and every X-Service-* and Proxy-*.
func ReservedHeader(name string) bool {
	n := strings.ToLower(name)
	return slices.Contains(reservedHeaders, n) || strings.HasPrefix(n, "x-service-") || strings.HasPrefix(n, "proxy-")
}

// CheckRequestHeaders validates request_headers (a null value drops the
// header): at most MaxRequestHeaders, each name an HTTP token that is not
// reserved and not repeated in another case, each value without control
// characters (no CR, LF or NUL), within the sizes above. A value of
// HiddenHeaderValue keeps the stored one of current (a webhook read,
// changed and sent back); without one it is refused. loc is where the
// object is in the body. It returns the headers to send.
func CheckRequestHeaders(v *apperr.Validator, in map[string]*string, current map[string]string, loc ...any) map[string]string {
	at := func(name string) []any { return append(append([]any{}, loc...), name) }
	out := make(map[string]string, len(in))
	if len(in) > MaxRequestHeaders {
		v.Add("At most 20 request headers", "too_long", loc...)
		return out
	}
	size, seen := 0, map[string]bool{}
	for name, value := range in {
		switch {
		case name == "" || len(name) > MaxRequestHeaderName || !httpguts.ValidHeaderFieldName(name):
			v.Add("A header name is an HTTP token of 1 to 128 characters", "value_error", at(name)...)
			continue
		case ReservedHeader(name):
			v.Add("This header is the platform's (a signature, the content type, the host or a transport header) and cannot be set", "value_error", at(name)...)
			continue
		case seen[strings.ToLower(name)]:
			v.Add("The same header is named twice", "value_error", at(name)...)
			continue
		}
		seen[strings.ToLower(name)] = true
		if value == nil {
			continue
		}
		if *value == HiddenHeaderValue {
			stored, ok := current[name]
			if !ok {
				v.Add(HiddenHeaderValue+" is how a stored value is shown, and this header has none: send its value", "value_error", at(name)...)
				continue
			}
			value = &stored
		}
		if len(*value) > MaxRequestHeaderValue || !httpguts.ValidHeaderFieldValue(*value) {
			v.Add("A header value has at most 1024 characters and no control characters (CR, LF, NUL…)", "value_error", at(name)...)
			continue
		}
		size += len(name) + len(*value)
		out[name] = *value
	}
	if size > MaxRequestHeadersSize {
		v.Add("The request headers take at most 8 KiB together", "too_long", loc...)
	}
	return out
}
