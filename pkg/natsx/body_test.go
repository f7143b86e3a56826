package natsx

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A body trickled a byte now and then is cut off once bodyWithin has
// passed, and answered: it no longer holds its connection for as long as
// the client likes. A body sent at once is read whole.
func TestABodyTrickledPastItsTimeIsRefused(t *testing.T) {
	old := bodyWithin
	bodyWithin = 200 * time.Millisecond
	t.Cleanup(func() { bodyWithin = old })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(w, r, 1<<20)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// 1 byte of a 100-byte body, then nothing: the server must answer
	// without the client sending more (the read below waits for it).
	if _, err := conn.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bound for a broken server, not a wait
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a trickled body: %v %v", resp, err)
	}

	r, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"name":"whole"}`))
	if err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("a body sent at once: %v %v", r, err)
	}
	r.Body.Close()
}
