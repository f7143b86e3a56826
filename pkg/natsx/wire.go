// Package natsx carries HTTP over NATS request/reply: a service serves its
// http.Handler on a NATS micro endpoint, and the gateway forwards each
// public request there. Services need no listening address; replicas join
// one queue group and NATS balances between them.
package natsx

import "strings"

// Headers that carry the HTTP request line and response status inside a
// NATS message; the remaining headers are the HTTP headers themselves.
const (
	hdrMethod     = "Voiceai-Http-Method"
	hdrURI        = "Voiceai-Http-Uri"
	hdrRemoteAddr = "Voiceai-Http-Remote-Addr"
	hdrStatus     = "Voiceai-Http-Status"
	// hdrStream on a reply names the subject the caller requests the
	// following chunks of a large response from; hdrStreamEnd marks the
	// last chunk.
	hdrStream    = "Voiceai-Http-Stream"
	hdrStreamEnd = "Voiceai-Http-Stream-End"
	// hdrStreamAbort marks a streamed response the service cut short.
	hdrStreamAbort = "Voiceai-Http-Stream-Abort"
	// hdrStreamCancel, on a request for the next chunk, says the caller
	// reads no more.
	hdrStreamCancel = "Voiceai-Http-Stream-Cancel"
	// hdrTimeout is how long, in milliseconds, the forwarder waits for the
	// answer to begin: the handler's deadline.
	hdrTimeout = "Voiceai-Http-Timeout-Ms"
	// hdrRequest is the forward's own id, the same on every attempt of
	// it: a service drops an attempt of a request it is serving, and
	// cancels the request on the forwarder's word (CancelSubject).
	hdrRequest = "Voiceai-Http-Request"
)

// streamChunk is the body size above which a response is streamed in
// chunks, each requested by the caller (so a slow client slows the
// service instead of piling up in memory).
const streamChunk = 256 << 10

// Subject is the NATS subject on which service name serves HTTP.
func Subject(service string) string { return "svc." + service + ".http" }

// CancelSubject is where a forwarder that gave up on a request tells every
// replica of service (the data is the request's hdrRequest).
func CancelSubject(service string) string { return "svc." + service + ".cancel" }

// hopByHop headers are meaningful for one connection only.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true,
}

func isTransportHeader(k string) bool {
	return hopByHop[k] || strings.HasPrefix(k, "Voiceai-Http-") || strings.HasPrefix(k, "Nats-")
}

// headerAllowance is room kept for headers when sizing a body against the
// server's maximum payload.
const headerAllowance = 64 << 10
