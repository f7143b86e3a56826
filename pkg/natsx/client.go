package natsx

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voiceai-platform/voiceai/pkg/httpx"
)

// Forwarder sends HTTP requests to services over NATS.
type Forwarder struct {
	NC      *nats.Conn
	Timeout time.Duration // per request; default 30s
	MaxBody int64         // request body limit; default httpx.DefaultMaxBody
}

// Forward relays r to service and writes its answer to w. No service
// replica listening is a 503, no answer within the deadline a 504, both in
// the spec's error shape.
func (f *Forwarder) Forward(w http.ResponseWriter, r *http.Request, service string) {
	maxBody := f.MaxBody
	if maxBody <= 0 {
		maxBody = httpx.DefaultMaxBody
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		httpx.WriteErrorStatus(w, r, http.StatusBadRequest, "unreadable_body", "The request body could not be read.")
		return
	}
	// A request must also fit in one NATS message with its headers.
	if limit := f.NC.MaxPayload() - headerAllowance; limit < maxBody {
		maxBody = limit
	}
	if int64(len(body)) > maxBody {
		httpx.WriteErrorStatus(w, r, http.StatusRequestEntityTooLarge, "body_too_large",
			"The request body exceeds "+strconv.FormatInt(maxBody, 10)+" bytes.")
		return
	}
	msg := nats.NewMsg(Subject(service))
	for k, vs := range r.Header {
		if !isTransportHeader(k) {
			msg.Header[k] = vs
		}
	}
	msg.Header.Set(hdrMethod, r.Method)
	msg.Header.Set(hdrURI, r.URL.RequestURI())
	msg.Header.Set(hdrRemoteAddr, r.RemoteAddr)
	msg.Data = body

	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	reply, err := f.NC.RequestMsgWithContext(ctx, msg)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		httpx.WriteErrorStatus(w, r, http.StatusServiceUnavailable, "service_unavailable",
			"The "+service+" service is not available; retry later.")
		return
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		httpx.WriteErrorStatus(w, r, http.StatusGatewayTimeout, "upstream_timeout",
			"The "+service+" service did not answer in time.")
		return
	case err != nil:
		httpx.LoggerFrom(r.Context()).Error("forward failed", "upstream", service, "err", err)
		httpx.WriteErrorStatus(w, r, http.StatusBadGateway, "upstream_failure", "The "+service+" service could not be reached.")
		return
	}
	status, err := strconv.Atoi(reply.Header.Get(hdrStatus))
	if err != nil || status < 100 || status > 599 {
		httpx.WriteErrorStatus(w, r, http.StatusBadGateway, "upstream_failure", "The "+service+" service answered malformed data.")
		return
	}
	for k, vs := range reply.Header {
		if !isTransportHeader(k) && k != httpx.HeaderRequestID {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(reply.Data)
	if subj := reply.Header.Get(hdrStream); subj != "" {
		f.pullStream(w, r, service, subj, timeout)
	}
}

// pullStream asks for the chunks of a streamed response one at a time and
// writes each to the client as it comes, so memory stays bounded by one
// chunk whatever the response size.
func (f *Forwarder) pullStream(w http.ResponseWriter, r *http.Request, service, subject string, timeout time.Duration) {
	flusher, _ := w.(http.Flusher)
	for {
		if flusher != nil {
			flusher.Flush()
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		chunk, err := f.NC.RequestWithContext(ctx, subject, nil)
		cancel()
		if err == nil && chunk.Header.Get(hdrStreamAbort) != "" {
			err = errors.New("the service aborted its response")
		}
		if err != nil {
			// Headers are gone; all we can do is cut the body short, which
			// the client sees as a truncated response.
			httpx.LoggerFrom(r.Context()).Error("streamed response cut short", "upstream", service, "err", err)
			panic(http.ErrAbortHandler)
		}
		if _, err := w.Write(chunk.Data); err != nil {
			return
		}
		if chunk.Header.Get(hdrStreamEnd) != "" {
			return
		}
	}
}
