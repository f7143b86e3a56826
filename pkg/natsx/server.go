package natsx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// StreamIdle is how long a streaming response waits for the caller to ask
// for its next chunk before giving up.
const StreamIdle = 30 * time.Second

// Service is a service's NATS endpoint.
type Service struct {
	micro.Service
	name      string
	handler   http.Handler
	admission *admission
	cancels   *nats.Subscription
	workers   *workers
	local     localKey // where in-process forwarders find it (locals)
}

// Ready fails while the process has had no free request slot for a
// while (see MaxConcurrent): part of its readiness.
func (s *Service) Ready(ctx context.Context) error { return s.admission.Ready(ctx) }

// Stop drains the endpoint; its idle request workers end at once, and
// busy ones when their request does.
func (s *Service) Stop() error {
	locals.CompareAndDelete(s.local, s)
	_ = s.cancels.Unsubscribe()
	err := s.Service.Stop()
	// The requests in flight are answered before Stop returns: the
	// process closes its connections next, and a handler reading a store
	// already gone would answer 500 where the request was served fine.
	if !s.workers.drain(DrainLimit) {
		err = errors.Join(err, fmt.Errorf("%s: requests still in flight after %s", s.name, DrainLimit))
	}
	s.workers.stop()
	return err
}

// DrainLimit bounds how long Stop waits for the requests in flight.
const DrainLimit = 10 * time.Second

// Serve registers handler as NATS micro service name, answering HTTP
// requests forwarded to Subject(name). Requests are handled concurrently,
// up to MaxConcurrent, MaxPerWorkspace of one workspace; past that a
// request is refused at once (503, or 429 for its workspace), never
// queued behind the others. Each handler's context ends at the
// forwarder's deadline (unless its answer is streaming by then), when a
// streamed answer's reader stops asking for it, and when the forwarder
// gives up (CancelSubject). Close the returned service (Stop) to drain it.
// A Forwarder of this process with InProcess set, on nc, calls handler
// directly until Stop, under the same admission.
func Serve(nc *nats.Conn, name, version string, handler http.Handler) (*Service, error) {
	adm, pool := newAdmission(MaxConcurrent, MaxPerWorkspace), newWorkers()
	cancels, err := nc.Subscribe(CancelSubject(name), func(m *nats.Msg) { adm.cancel(string(m.Data)) })
	if err != nil {
		return nil, err
	}
	svc, err := micro.AddService(nc, micro.Config{
		Name:        name,
		Version:     version,
		Description: "voiceai " + name + " service (HTTP over NATS)",
		Endpoint: &micro.EndpointConfig{
			Subject: Subject(name),
			Handler: micro.HandlerFunc(func(req micro.Request) {
				h := nats.Header(req.Headers())
				tenant, id := h.Get(principal.HeaderWorkspace), h.Get(hdrRequest)
				ctx, cancel := context.WithCancelCause(context.Background())
				switch adm.admit(tenant, id, cancel) {
				case duplicate: // the first attempt answers
					cancel(nil)
				case abandoned: // nobody waits for an answer
					cancel(nil)
				case full:
					cancel(nil)
					refuse(nc, req, apperr.ServiceAtCapacity)
				case overTenant:
					cancel(nil)
					refuse(nc, req, apperr.WorkspaceAtCapacity)
				case admitted:
					pool.do(func() {
						defer adm.release(tenant, id)
						defer cancel(nil)
						serveOne(ctx, cancel, nc, handler, req)
					})
				}
			}),
		},
	})
	if err != nil {
		_ = cancels.Unsubscribe()
		return nil, err
	}
	s := &Service{Service: svc, name: name, handler: handler, admission: adm, cancels: cancels, workers: pool, local: localKey{nc, name}}
	locals.Store(s.local, s)
	return s, nil
}

// refuse answers a request no slot was free for; it may be retried in a
// moment.
func refuse(nc *nats.Conn, req micro.Request, e *apperr.Error) {
	respond(nc, req, httpx.StatusOf(e), http.Header{"Content-Type": {"application/json"}, "Retry-After": {"1"}},
		httpx.ErrorJSON(e, nats.Header(req.Headers()).Get(httpx.HeaderRequestID)))
}

// errDeadline ends a request whose forwarder's deadline passed before
// its answer began.
var errDeadline = errors.New("natsx: the caller's deadline passed")

func serveOne(ctx context.Context, cancel context.CancelCauseFunc, nc *nats.Conn, handler http.Handler, req micro.Request) {
	h := req.Headers()
	// The path is copied out of the header block (one string for every
	// header): its ids end up kept (a ticket's agent, in a read model held
	// in memory), and would keep the block with them. The caller's ids are
	// copied where they are read (principal.FromHeaders).
	r, err := http.NewRequestWithContext(ctx, nats.Header(h).Get(hdrMethod), strings.Clone(nats.Header(h).Get(hdrURI)), bytes.NewReader(req.Data()))
	if err != nil {
		respond(nc, req, httpx.StatusOf(apperr.MalformedForward), http.Header{"Content-Type": {"application/json"}},
			httpx.ErrorJSON(apperr.MalformedForward, ""))
		return
	}
	for k, vs := range h {
		if !isTransportHeader(k) {
			r.Header[k] = vs
		}
	}
	r.RemoteAddr = nats.Header(h).Get(hdrRemoteAddr)
	r.ContentLength = int64(len(req.Data()))
	rec := &recorder{header: http.Header{}, nc: nc, req: req, cancel: cancel}
	// Until its answer begins, a request lives as long as its caller
	// waits; once streaming, as long as the caller keeps asking.
	if ms, err := strconv.ParseInt(nats.Header(h).Get(hdrTimeout), 10, 64); err == nil && ms > 0 {
		rec.deadline = time.AfterFunc(time.Duration(ms)*time.Millisecond, func() {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if rec.stream == nil {
				cancel(errDeadline)
			}
		})
		defer rec.deadline.Stop()
	}
	defer func() {
		// A handler aborts (http.ErrAbortHandler) when it fails after
		// sending its status: the caller must see a cut response.
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				panic(p)
			}
			rec.abort()
		}
	}()
	handler.ServeHTTP(rec, r)
	if ctx.Err() != nil && !rec.streaming() {
		return // the caller stopped waiting: nobody reads an answer
	}
	rec.finish()
}

// respond answers req on its reply subject. It publishes on nc, not
// through req.Respond: micro's request handler reads what Respond records
// of a failure once our handler returns, and our answer comes later, from
// a worker (the two raced when an answer failed as the service stopped).
func respond(nc *nats.Conn, req micro.Request, status int, header http.Header, body []byte, extra ...string) {
	reply := req.Reply()
	if reply == "" {
		return // a publish, not a request: nobody waits for an answer
	}
	out := make(nats.Header, len(header)+1+len(extra)/2)
	for k, vs := range header {
		out[k] = vs
	}
	out[hdrStatus] = []string{strconv.Itoa(status)}
	for i := 0; i+1 < len(extra); i += 2 {
		out[extra[i]] = []string{extra[i+1]}
	}
	_ = nc.PublishMsg(&nats.Msg{Subject: reply, Header: out, Data: body})
}

// errStreamAbandoned is returned by Write when the caller stopped asking
// for chunks (client gone, or gateway timeout).
var errStreamAbandoned = errors.New("natsx: caller abandoned the streamed response")

// recorder buffers a response; one that outgrows streamChunk is streamed:
// the first chunk answers the request and names a subject on which the
// caller asks for each following chunk.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer

	nc       *nats.Conn
	req      micro.Request
	cancel   context.CancelCauseFunc // ends the handler's context
	deadline *time.Timer             // the caller's, until streaming
	mu       sync.Mutex              // guards stream against the deadline
	stream   *nats.Subscription      // set once streaming
	failed   bool
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.failed {
		return 0, errStreamAbandoned
	}
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, _ := r.body.Write(b)
	for r.body.Len() >= streamChunk {
		if err := r.sendChunk(r.body.Next(streamChunk), false); err != nil {
			// Nobody reads on: the handler's work ends here too.
			r.failed = true
			r.cancel(err)
			return n, err
		}
	}
	return n, nil
}

// Flush is a no-op: chunks leave when full.
func (r *recorder) Flush() {}

func (r *recorder) statusOrOK() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

// sendChunk sends one chunk: the first as the reply to the request, the
// others each as the answer to the caller's request for more.
func (r *recorder) sendChunk(chunk []byte, last bool) error {
	if r.stream == nil {
		sub, err := r.nc.SubscribeSync(r.nc.NewInbox())
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.stream = sub
		r.mu.Unlock()
		respond(r.nc, r.req, r.statusOrOK(), r.header, chunk, hdrStream, sub.Subject)
		return nil
	}
	next, err := r.stream.NextMsg(StreamIdle)
	if err != nil || next.Header.Get(hdrStreamCancel) != "" {
		return errStreamAbandoned
	}
	h := nats.Header{}
	if last {
		h.Set(hdrStreamEnd, "1")
	}
	return next.RespondMsg(&nats.Msg{Subject: next.Reply, Header: h, Data: chunk})
}

// abort tells the caller the response is cut short.
func (r *recorder) abort() {
	if r.stream == nil {
		respond(r.nc, r.req, httpx.StatusOf(apperr.ResponseAborted), http.Header{"Content-Type": {"application/json"}}, httpx.ErrorJSON(apperr.ResponseAborted, ""))
		return
	}
	defer func() { _ = r.stream.Unsubscribe() }()
	if next, err := r.stream.NextMsg(StreamIdle); err == nil && next.Header.Get(hdrStreamCancel) == "" {
		h := nats.Header{}
		h.Set(hdrStreamAbort, "1")
		_ = next.RespondMsg(&nats.Msg{Subject: next.Reply, Header: h})
	}
}

// streaming reports whether the answer has begun (in chunks).
func (r *recorder) streaming() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stream != nil
}

// finish sends what is left: the whole response when it was small.
func (r *recorder) finish() {
	if r.stream == nil {
		respond(r.nc, r.req, r.statusOrOK(), r.header, r.body.Bytes())
		return
	}
	defer func() { _ = r.stream.Unsubscribe() }()
	if !r.failed {
		_ = r.sendChunk(r.body.Bytes(), true)
	}
}
