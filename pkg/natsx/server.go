package natsx

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
)

// MaxConcurrent bounds the requests one service process handles at once.
const MaxConcurrent = 256

// streamIdle is how long a streaming response waits for the caller to ask
// for its next chunk before giving up.
const streamIdle = 30 * time.Second

// Serve registers handler as NATS micro service name, answering HTTP
// requests forwarded to Subject(name). Requests are handled concurrently
// (up to MaxConcurrent). Close the returned service (Stop) to drain it.
func Serve(nc *nats.Conn, name, version string, handler http.Handler) (micro.Service, error) {
	slots := make(chan struct{}, MaxConcurrent)
	return micro.AddService(nc, micro.Config{
		Name:        name,
		Version:     version,
		Description: "voiceai " + name + " service (HTTP over NATS)",
		Endpoint: &micro.EndpointConfig{
			Subject: Subject(name),
			Handler: micro.HandlerFunc(func(req micro.Request) {
				slots <- struct{}{}
				go func() {
					defer func() { <-slots }()
					serveOne(nc, handler, req)
				}()
			}),
		},
	})
}

func serveOne(nc *nats.Conn, handler http.Handler, req micro.Request) {
	h := req.Headers()
	r, err := http.NewRequest(nats.Header(h).Get(hdrMethod), nats.Header(h).Get(hdrURI), bytes.NewReader(req.Data()))
	if err != nil {
		respond(req, httpx.StatusOf(apperr.MalformedForward), http.Header{"Content-Type": {"application/json"}},
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
	rec := &recorder{header: http.Header{}, nc: nc, req: req}
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
	rec.finish()
}

func respond(req micro.Request, status int, header http.Header, body []byte, extra ...string) {
	out := micro.Headers{}
	for k, vs := range header {
		out[k] = vs
	}
	out[hdrStatus] = []string{strconv.Itoa(status)}
	for i := 0; i+1 < len(extra); i += 2 {
		out[extra[i]] = []string{extra[i+1]}
	}
	_ = req.Respond(body, micro.WithHeaders(out))
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

	nc     *nats.Conn
	req    micro.Request
	stream *nats.Subscription // set once streaming
	failed bool
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
			r.failed = true
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
		r.stream = sub
		respond(r.req, r.statusOrOK(), r.header, chunk, hdrStream, sub.Subject)
		return nil
	}
	next, err := r.stream.NextMsg(streamIdle)
	if err != nil {
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
		respond(r.req, httpx.StatusOf(apperr.ResponseAborted), http.Header{"Content-Type": {"application/json"}}, httpx.ErrorJSON(apperr.ResponseAborted, ""))
		return
	}
	defer func() { _ = r.stream.Unsubscribe() }()
	if next, err := r.stream.NextMsg(streamIdle); err == nil {
		h := nats.Header{}
		h.Set(hdrStreamAbort, "1")
		_ = next.RespondMsg(&nats.Msg{Subject: next.Reply, Header: h})
	}
}

// finish sends what is left: the whole response when it was small.
func (r *recorder) finish() {
	if r.stream == nil {
		respond(r.req, r.statusOrOK(), r.header, r.body.Bytes())
		return
	}
	defer func() { _ = r.stream.Unsubscribe() }()
	if !r.failed {
		_ = r.sendChunk(r.body.Bytes(), true)
	}
}
