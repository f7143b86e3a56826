package natsx

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// In process. Where one process both forwards requests and serves their
// service on the same connection (the all-in-one platform), carrying a
// request through NATS and back copies it four times and passes it
// through the server and two more goroutines for nothing. A Forwarder
// with InProcess set hands such a request to the service's handler
// directly. What the service promises holds as over NATS: the same
// admission (its slots, its workspace's share), the handler's context
// ending at the deadline unless its answer has begun, when the caller
// goes away or stops reading, or when a streamed answer stalls, and a
// large answer written as it comes. Only the service's replicas
// elsewhere are passed by: a process answers its own requests.

// localKey names a service served on a connection.
type localKey struct {
	nc      *nats.Conn
	service string
}

// locals holds the services this process serves, by connection and
// name (Serve adds, Stop removes).
var locals sync.Map // localKey → *Service

// localService is the service this process serves as name on nc, if any.
func localService(nc *nats.Conn, name string) *Service {
	if s, ok := locals.Load(localKey{nc, name}); ok {
		return s.(*Service)
	}
	return nil
}

// serveLocal serves r, whose body the forwarder has read (body), as a
// forward to s would: the handler sees the request a service receives
// over NATS, on one of the service's request workers, and the caller
// hears the answer the forwarder would write, when the forwarder would:
// at the deadline or when the caller goes away, whether or not the
// handler has returned (unless its answer has begun).
func (s *Service) serveLocal(w http.ResponseWriter, r *http.Request, body []byte, timeout time.Duration) {
	tenant := r.Header.Get(principal.HeaderWorkspace)
	// A context of its own, as over NATS: nothing of the forwarder's
	// request reaches the service but what the request carries.
	ctx, cancel := context.WithCancelCause(context.Background())
	switch s.admission.admit(tenant, "", cancel) {
	case full:
		cancel(nil)
		refuseLocal(w, r, apperr.ServiceAtCapacity)
		return
	case overTenant:
		cancel(nil)
		refuseLocal(w, r, apperr.WorkspaceAtCapacity)
		return
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		s.admission.release(tenant, "")
		cancel(nil)
		httpx.WriteError(w, r, apperr.MalformedForward)
		return
	}
	req.Header = make(http.Header, len(r.Header))
	for k, vs := range r.Header {
		if !isTransportHeader(k) {
			req.Header[k] = vs
		}
	}
	req.RemoteAddr = r.RemoteAddr
	req.ContentLength = int64(len(body))

	out := &localResponse{to: w, requestID: r.Header.Get(httpx.HeaderRequestID), service: s.name, header: http.Header{}, timeout: timeout, cancel: cancel}
	done := make(chan struct{})
	s.workers.do(func() {
		defer close(done)
		defer s.admission.release(tenant, "")
		defer cancel(nil)
		defer func() {
			// A handler aborts (http.ErrAbortHandler) when it fails after
			// sending its status: the caller must see a cut response.
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler {
					panic(p)
				}
				out.abort()
			}
		}()
		s.handler.ServeHTTP(out, req)
		out.finish()
	})

	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	select {
	case <-done:
	case <-deadline.C:
		if out.giveUpUnlessBegun(errDeadline) {
			httpx.WriteError(w, r, apperr.UpstreamTimedOut(s.name))
			return
		}
		if !out.follow(r, done) {
			return
		}
	case <-r.Context().Done():
		out.leave(r)
		return
	}
	if out.cut {
		httpx.NoteAborted(r.Context(), "upstream stream failed")
		httpx.LoggerFrom(r.Context()).Error("streamed response cut short", "upstream", s.name, "err", errors.New("the service aborted its response"))
		panic(http.ErrAbortHandler) // on the caller's side, where the server expects it
	}
}

// follow waits for an answer that has begun to end, as long as the caller
// reads it and it goes on: a stream with nothing passed for a whole
// time-out is cut short, as pullStream cuts one whose next chunk does not
// come. It reports whether the answer ended of itself.
func (o *localResponse) follow(r *http.Request, done <-chan struct{}) bool {
	idle := time.NewTicker(o.timeout)
	defer idle.Stop()
	passed := o.passes.Load()
	for {
		select {
		case <-done:
			return true
		case <-r.Context().Done():
			o.leave(r)
			return false
		case <-idle.C:
			if n := o.passes.Load(); n != passed {
				passed = n
				continue
			}
			o.mu.Lock()
			o.gaveUp = true
			o.cancel(errStreamAbandoned)
			o.mu.Unlock()
			httpx.NoteAborted(r.Context(), "upstream stream failed")
			httpx.LoggerFrom(r.Context()).Error("streamed response cut short", "upstream", o.service, "err", errors.New("the service stopped sending its response"))
			panic(http.ErrAbortHandler)
		}
	}
}

// refuseLocal answers a request no slot was free for, as refuse does.
func refuseLocal(w http.ResponseWriter, r *http.Request, e *apperr.Error) {
	w.Header().Set("Retry-After", "1")
	httpx.WriteError(w, r, e)
}

// localResponse keeps a handler's answer until it is whole, or until it
// outgrows streamChunk: from then on it passes to the caller as it is
// written, each write bounded by the forwarder's time-out (a client that
// reads nothing is cut off, not waited on for ever), as pullStream
// writes the chunks it asks for. It is written on the service's worker,
// while the caller's side waits for it to end, or gives up on it (at the
// deadline before the answer began, or when the caller goes away): from
// then on nothing more reaches the caller.
type localResponse struct {
	to        http.ResponseWriter
	requestID string // the caller's, for an error the worker answers
	service   string
	header    http.Header
	status    int
	body      bytes.Buffer
	timeout   time.Duration
	cancel    context.CancelCauseFunc

	streamed bool // the worker's: the answer passes as it comes
	failed   bool // the worker's: the caller reads no more
	cut      bool // the handler aborted after its answer began

	// mu is held while the answer is written to the caller, and to give
	// up on it: the two sides never write to the caller at once.
	mu       sync.Mutex
	passing  bool // the answer has begun: status and headers sent
	finished bool // the answer is whole
	gaveUp   bool // the caller's side answered or left

	passes atomic.Int64 // writes passed to the caller, for follow
}

func (o *localResponse) Header() http.Header { return o.header }

func (o *localResponse) WriteHeader(code int) {
	if o.status == 0 {
		o.status = code
	}
}

func (o *localResponse) Write(b []byte) (int, error) {
	if o.failed {
		return 0, errStreamAbandoned
	}
	if o.status == 0 {
		o.status = http.StatusOK
	}
	n, _ := o.body.Write(b)
	if o.body.Len() >= streamChunk {
		o.streamed = true
		if err := o.pass(o.body.Next(o.body.Len())); err != nil {
			// Nobody reads on: the handler's work ends here too.
			o.failed = true
			o.cancel(err)
			return n, err
		}
	}
	return n, nil
}

// Flush is a no-op, as the recorder's: what is kept leaves when large.
func (o *localResponse) Flush() {}

// pass writes b to the caller, after the status and headers if they have
// not gone yet (as the forwarder copies them from a reply: the caller's
// request id stays the forwarder's own). Once streamed, a write must be
// taken within the time-out.
func (o *localResponse) pass(b []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.gaveUp {
		return errStreamAbandoned
	}
	if !o.passing {
		o.passing = true
		for k, vs := range o.header {
			if !isTransportHeader(k) && k != httpx.HeaderRequestID {
				o.to.Header()[k] = vs
			}
		}
		o.to.WriteHeader(cmp.Or(o.status, http.StatusOK))
	}
	if !o.streamed {
		_, _ = o.to.Write(b)
		return nil
	}
	rc := http.NewResponseController(o.to)
	_ = rc.SetWriteDeadline(time.Now().Add(o.timeout))
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }() // the connection may serve another request
	if _, err := o.to.Write(b); err != nil {
		return errStreamAbandoned
	}
	_ = rc.Flush()
	o.passes.Add(1)
	return nil
}

// finish writes what is left: the whole answer when it was small.
func (o *localResponse) finish() {
	if o.failed || o.pass(o.body.Bytes()) != nil {
		return
	}
	o.mu.Lock()
	o.finished = true
	o.mu.Unlock()
}

// abort answers a handler that gave up (http.ErrAbortHandler): before its
// answer began, with the error a forward hears; after, by having the
// caller's side cut the response short (cut), as pullStream does.
func (o *localResponse) abort() {
	switch {
	case !o.streamed:
		o.header = http.Header{"Content-Type": {"application/json"}}
		o.status = httpx.StatusOf(apperr.ResponseAborted)
		o.body.Reset()
		o.body.Write(httpx.ErrorJSON(apperr.ResponseAborted, o.requestID))
		o.finish()
	case !o.failed: // else the caller stopped reading first: nothing more to say
		o.cut = true
	}
}

// giveUpUnlessBegun ends the handler's context for why unless its answer
// has begun, and reports whether it did: the caller's side then answers
// alone.
func (o *localResponse) giveUpUnlessBegun(why error) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.passing {
		return false
	}
	o.gaveUp = true
	o.cancel(why)
	return true
}

// leave ends the handler's work for a caller gone away (r's context
// ended), whether or not its answer began: an answer cut short is
// aborted, as pullStream aborts it.
func (o *localResponse) leave(r *http.Request) {
	o.mu.Lock()
	o.gaveUp = true
	o.cancel(errCallerGaveUp)
	began, finished := o.passing, o.finished
	o.mu.Unlock()
	switch {
	case !began && errors.Is(context.Cause(r.Context()), ErrStopping):
		httpx.WriteError(o.to, r, apperr.GatewayStopping) // 503: send it again
	case !began:
		httpx.LoggerFrom(r.Context()).Debug("client went away before the answer", "upstream", o.service)
	case !finished:
		httpx.NoteAborted(r.Context(), "client went away")
		panic(http.ErrAbortHandler)
	}
}
