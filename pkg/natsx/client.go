package natsx

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
)

// Forwarder sends HTTP requests to services over NATS.
type Forwarder struct {
	NC      *nats.Conn
	Timeout time.Duration // per request; default 30s
	MaxBody int64         // request body limit; default httpx.DefaultMaxBody
	// HedgeAfter is how long a request marked Repeatable waits for its
	// answer before it is sent again, the first attempt still waiting;
	// default 2s, negative never.
	HedgeAfter time.Duration
	// BusWait is how long a request waits for the connection to NATS
	// being made again (a node failing over takes about a second) before
	// it is answered 503; default 5s. While NATS is down it would
	// otherwise wait out its whole deadline and be answered 504, as if a
	// service were slow.
	BusWait time.Duration
	// InProcess serves a request for a service this process serves on NC
	// (Serve) by calling its handler, not through NATS (see local.go).
	InProcess bool

	reconnects reconnectWatch
	replies    replies
}

// reconnectWatch tells of the connection's reconnections: next is closed
// at the next one. It is read by every repeatable request, so without a
// lock; only a reconnection writes it.
type reconnectWatch struct {
	once sync.Once
	next atomic.Pointer[chan struct{}]
}

// reconnected is closed when the connection next reconnects. A request
// written to a connection that turned out dead (its node killed or cut
// off) went nowhere; one marked Repeatable is sent again on the new
// connection at once, not at its next hedge.
func (f *Forwarder) reconnected() <-chan struct{} {
	w := &f.reconnects
	w.once.Do(func() {
		first := make(chan struct{})
		w.next.Store(&first)
		events := f.NC.StatusChanged(nats.CONNECTED, nats.CLOSED)
		go func() {
			defer f.NC.RemoveStatusListener(events)
			for status := range events {
				next := make(chan struct{})
				close(*w.next.Swap(&next))
				if status == nats.CLOSED {
					return
				}
			}
		}()
	})
	return *w.next.Load()
}

func (f *Forwarder) busWait() time.Duration {
	if f.BusWait > 0 {
		return f.BusWait
	}
	return 5 * time.Second
}

// awaitConnection waits, at most for wait, until the connection is up
// again; false when it is not (or ctx ended).
func (f *Forwarder) awaitConnection(ctx context.Context, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		next := f.reconnected() // before the check: a reconnection after it closes next
		switch {
		case f.NC.IsConnected():
			return true
		case f.NC.IsClosed():
			return false
		}
		select {
		case <-next:
		case <-timer.C:
			return f.NC.IsConnected()
		case <-ctx.Done():
			return false
		}
	}
}

// ErrStopping is the cause a request's context is cancelled with when the
// process forwarding it begins to stop and will not wait for its answer
// (a long poll): it is answered 503, to be sent again, not taken for a
// client gone.
var ErrStopping = errors.New("the gateway is stopping")

// maxHedges bounds the extra attempts of one request.
const maxHedges = 2

// Forward relays r to service and writes its answer to w. No service
// replica listening is a 503, no answer within the deadline a 504, both in
// the spec's error shape.
func (f *Forwarder) Forward(w http.ResponseWriter, r *http.Request, service string) {
	f.ForwardWithin(w, r, service, f.Timeout)
}

// bodyWithin is how long a request's body may take to arrive: a client
// trickling a byte now and then would otherwise hold its connection, and
// the memory of what it sent, for as long as it likes (the server's
// ReadHeaderTimeout bounds only the headers; a ReadTimeout on the whole
// request would end long polls too).
var bodyWithin = 30 * time.Second

// readBody reads up to maxBody+1 bytes of r's body within bodyWithin
// (nil for a request without one, most reads: nothing to read or keep).
func readBody(w http.ResponseWriter, r *http.Request, maxBody int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	rc := http.NewResponseController(w)
	limited := rc.SetReadDeadline(time.Now().Add(bodyWithin)) == nil
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		// The deadline stays: the server would otherwise wait, before it
		// answers, for the rest of the body it discards.
		w.Header().Set("Connection", "close")
		return nil, err
	}
	if limited {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return body, nil
}

// ForwardWithin is Forward with a deadline of its own (0: the
// Forwarder's), for an operation that takes longer than most.
func (f *Forwarder) ForwardWithin(w http.ResponseWriter, r *http.Request, service string, timeout time.Duration) {
	maxBody := f.MaxBody
	if maxBody <= 0 {
		maxBody = httpx.DefaultMaxBody
	}
	body, err := readBody(w, r, maxBody)
	if err != nil {
		httpx.WriteError(w, r, apperr.UnreadableBody)
		return
	}
	// A request must also fit in one NATS message with its headers.
	if limit := f.NC.MaxPayload() - headerAllowance; limit < maxBody {
		maxBody = limit
	}
	if int64(len(body)) > maxBody {
		httpx.WriteError(w, r, apperr.BodyTooLarge(maxBody))
		return
	}
	if timeout <= 0 {
		timeout = f.Timeout
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if f.InProcess {
		if s := localService(f.NC, service); s != nil {
			s.serveLocal(w, r, body, timeout)
			return
		}
	}
	if !f.NC.IsConnected() && !f.awaitConnection(r.Context(), min(timeout, f.busWait())) {
		if r.Context().Err() == nil {
			httpx.WriteError(w, r, apperr.BusDisconnected(service)) // 503, Retry-After
		}
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	// The service stops at our deadline, drops a hedge of what it is
	// already serving, and hears when we give up.
	id := forwardID()
	left := timeout
	if deadline, ok := ctx.Deadline(); ok {
		left = time.Until(deadline)
	}
	// Every forwarded request builds this message: its header map is
	// made at its final size and the five values of ours share one slice.
	msg := &nats.Msg{Subject: Subject(service), Header: make(nats.Header, len(r.Header)+5), Data: body}
	for k, vs := range r.Header {
		if !isTransportHeader(k) {
			msg.Header[k] = vs
		}
	}
	ours := []string{r.Method, r.URL.RequestURI(), r.RemoteAddr, id, strconv.FormatInt(max(left.Milliseconds(), 1), 10)}
	for i, k := range [...]string{hdrMethod, hdrURI, hdrRemoteAddr, hdrRequest, hdrTimeout} {
		msg.Header[k] = ours[i : i+1 : i+1]
	}
	var reply *nats.Msg
	if repeatable(r) && f.HedgeAfter >= 0 {
		reply, err = f.hedged(ctx, msg)
	} else {
		reply, err = f.NC.RequestMsgWithContext(ctx, msg)
	}
	if err != nil && ctx.Err() != nil {
		_ = f.NC.Publish(CancelSubject(service), []byte(id))
	}
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		httpx.WriteError(w, r, apperr.UpstreamUnavailable(service))
		return
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		httpx.WriteError(w, r, apperr.UpstreamTimedOut(service))
		return
	case lostWithConnection(err):
		httpx.WriteError(w, r, apperr.UpstreamLost(service)) // 503, Retry-After
		return
	case errors.Is(context.Cause(r.Context()), ErrStopping):
		httpx.WriteError(w, r, apperr.GatewayStopping) // 503, Retry-After
		return
	case r.Context().Err() != nil:
		// The client hung up: nothing to answer, nothing for an operator
		// to do.
		httpx.LoggerFrom(r.Context()).Debug("client went away before the answer", "upstream", service, "err", err)
		return
	case err != nil:
		httpx.LoggerFrom(r.Context()).Error("forward failed", "upstream", service, "err", err)
		httpx.WriteError(w, r, apperr.UpstreamUnreachable(service))
		return
	}
	status, err := strconv.Atoi(reply.Header.Get(hdrStatus))
	if err != nil || status < 100 || status > 599 {
		httpx.WriteError(w, r, apperr.UpstreamMalformed(service))
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

// forwardID names one forward, the same on each of its attempts.
func forwardID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// repeatable reports whether r was marked as one Forward may send twice.
func repeatable(r *http.Request) bool {
	may, _ := r.Context().Value(repeatableKey{}).(bool)
	return may
}

type repeatableKey struct{}

// Repeatable marks r as one Forward may send more than once (hedge it,
// send it again after a reconnect): its operation gives the same result
// however often it is served, as a read does, or a write whose
// Idempotency-Key it honours. An unmarked request is sent once: the mere
// presence of a key says nothing of whether the service honours it.
func Repeatable(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), repeatableKey{}, true))
}

// hedged sends msg and, while no answer has come, sends it again after
// HedgeAfter (at most maxHedges times) and whenever the connection has
// just reconnected: the first answer wins. A request lost with a NATS
// node or a service replica that died holding it would otherwise wait
// for the whole time-out (the client long gone); a slow one is still
// answered by its first attempt. Every attempt asks for its answer on
// the same inbox of the forwarder's own (replies), so the caller's
// goroutine waits for all of them: no goroutine, channel pair and
// hand-off per request, as one RequestMsg per attempt needed.
func (f *Forwarder) hedged(ctx context.Context, msg *nats.Msg) (*nats.Msg, error) {
	after := f.HedgeAfter
	if after == 0 {
		after = 2 * time.Second
	}
	in, err := f.replyInbox()
	if err != nil {
		return nil, err
	}
	token, answer := in.expect()
	defer in.forget(token)
	msg.Reply = in.prefix + token
	reconnected := f.reconnected()
	if err := f.NC.PublishMsg(msg); err != nil {
		return nil, err
	}
	timer := time.NewTimer(after)
	defer timer.Stop()
	for hedges := 0; ; {
		select {
		case m := <-answer:
			// No responders is an answer: nobody serves it.
			if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
				return nil, nats.ErrNoResponders
			}
			return m, nil
		case <-reconnected:
			reconnected = f.reconnected()
			if err := f.NC.PublishMsg(msg); err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			if hedges < maxHedges {
				hedges++
				if err := f.NC.PublishMsg(msg); err != nil {
					return nil, err
				}
				timer.Reset(after)
			}
		}
	}
}

// replies is a forwarder's inbox for the answers of repeatable requests:
// one subscription, on which each request waits under a token of its own.
type replies struct {
	once    sync.Once
	err     error
	prefix  string
	next    atomic.Uint64
	waiting sync.Map // token → chan *nats.Msg
}

// replyInbox subscribes the forwarder's inbox on first use; it lives as
// long as the connection.
func (f *Forwarder) replyInbox() (*replies, error) {
	in := &f.replies
	in.once.Do(func() {
		in.prefix = f.NC.NewInbox() + "."
		_, in.err = f.NC.Subscribe(in.prefix+"*", func(m *nats.Msg) {
			if ch, ok := in.waiting.Load(m.Subject[len(in.prefix):]); ok {
				select {
				case ch.(chan *nats.Msg) <- m:
				default: // another attempt's answer came first
				}
			}
		})
	})
	return in, in.err
}

func (in *replies) expect() (string, chan *nats.Msg) {
	token := strconv.FormatUint(in.next.Add(1), 36)
	ch := make(chan *nats.Msg, 1)
	in.waiting.Store(token, ch)
	return token, ch
}

func (in *replies) forget(token string) { in.waiting.Delete(token) }

// lostWithConnection reports an attempt lost with its NATS connection: the
// connection broke, or moved to another server, while it waited.
func lostWithConnection(err error) bool {
	return errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrConnectionReconnecting)
}

// pullStream asks for the chunks of a streamed response one at a time and
// writes each to the client as it comes, so memory stays bounded by one
// chunk whatever the response size.
func (f *Forwarder) pullStream(w http.ResponseWriter, r *http.Request, service, subject string, timeout time.Duration) {
	flusher, _ := w.(http.Flusher)
	rc := http.NewResponseController(w)
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }() // the connection may serve another request
	for {
		// A client that reads nothing for as long as the service waits for
		// us is cut off, not waited on for ever (ignored where the writer
		// cannot say).
		_ = rc.SetWriteDeadline(time.Now().Add(timeout))
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
			cancelStream(f.NC, subject)
			// Headers are gone; all we can do is cut the body short, which
			// the client sees as a truncated response. A client that went
			// away is nobody's error: its access-log line says so.
			if r.Context().Err() != nil {
				httpx.NoteAborted(r.Context(), "client went away")
			} else {
				httpx.NoteAborted(r.Context(), "upstream stream failed")
				httpx.LoggerFrom(r.Context()).Error("streamed response cut short", "upstream", service, "err", err)
			}
			panic(http.ErrAbortHandler)
		}
		if _, err := w.Write(chunk.Data); err != nil {
			// The client reads no more: the service stops writing at once,
			// not after its idle wait.
			cancelStream(f.NC, subject)
			return
		}
		if chunk.Header.Get(hdrStreamEnd) != "" {
			return
		}
	}
}

// cancelStream tells the service streaming on subject that nobody reads
// on.
func cancelStream(nc *nats.Conn, subject string) {
	m := nats.NewMsg(subject)
	m.Header.Set(hdrStreamCancel, "1")
	_ = nc.PublishMsg(m)
}

// Call sends r to service as Forward does and returns the answer's status
// and body: how one service asks another on its caller's behalf (r
// carries the caller's principal headers).
func (f *Forwarder) Call(r *http.Request, service string) (status int, body []byte) {
	if r.Body == nil {
		r.Body = http.NoBody // a client request without a body has none
	}
	var out bufferedResponse
	f.Forward(&out, r, service)
	return out.statusOrOK(), out.body.Bytes()
}

// bufferedResponse keeps an answer in memory.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header {
	if b.header == nil {
		b.header = http.Header{}
	}
	return b.header
}

func (b *bufferedResponse) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

func (b *bufferedResponse) statusOrOK() int {
	if b.status == 0 {
		return http.StatusOK
	}
	return b.status
}
