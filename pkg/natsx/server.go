package natsx

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// Serve registers handler as NATS micro service name, answering HTTP
// requests forwarded to Subject(name). Close the returned service (Stop) to
// drain it.
func Serve(nc *nats.Conn, name, version string, handler http.Handler) (micro.Service, error) {
	return micro.AddService(nc, micro.Config{
		Name:        name,
		Version:     version,
		Description: "voiceai " + name + " service (HTTP over NATS)",
		Endpoint: &micro.EndpointConfig{
			Subject: Subject(name),
			Handler: micro.HandlerFunc(func(req micro.Request) { serveOne(handler, req, nc.MaxPayload()) }),
		},
	})
}

func serveOne(handler http.Handler, req micro.Request, maxPayload int64) {
	h := req.Headers()
	r, err := http.NewRequest(nats.Header(h).Get(hdrMethod), nats.Header(h).Get(hdrURI), bytes.NewReader(req.Data()))
	if err != nil {
		respond(req, http.StatusBadRequest, http.Header{"Content-Type": {"application/json"}},
			[]byte(`{"detail":{"status":"bad_request","message":"The forwarded request is malformed.","request_id":null}}`))
		return
	}
	for k, vs := range h {
		if !isTransportHeader(k) {
			r.Header[k] = vs
		}
	}
	r.RemoteAddr = nats.Header(h).Get(hdrRemoteAddr)
	r.ContentLength = int64(len(req.Data()))
	rec := &recorder{header: http.Header{}}
	handler.ServeHTTP(rec, r)
	if int64(rec.body.Len()) > maxPayload-headerAllowance {
		respond(req, http.StatusBadGateway, http.Header{"Content-Type": {"application/json"}},
			[]byte(`{"detail":{"status":"response_too_large","message":"The response exceeds the bus's message size; narrow the request.","request_id":null}}`))
		return
	}
	respond(req, rec.statusOrOK(), rec.header, rec.body.Bytes())
}

func respond(req micro.Request, status int, header http.Header, body []byte) {
	out := micro.Headers{}
	for k, vs := range header {
		out[k] = vs
	}
	out[hdrStatus] = []string{strconv.Itoa(status)}
	_ = req.Respond(body, micro.WithHeaders(out))
}

// recorder buffers one response; replies are a single NATS message.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) statusOrOK() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}
