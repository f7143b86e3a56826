package natsx

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// Finding 8 of issue 47: a client that hangs up on a streamed GET (an
// answer of several chunks) is one access-log line, at info, with the
// status and why it was cut short, and no ERROR line.
func TestStreamedResponseClientHangUpIsOneAccessLine(t *testing.T) {
	onBothPaths(t, testStreamedResponseClientHangUpIsOneAccessLine)
}

func testStreamedResponseClientHangUpIsOneAccessLine(t *testing.T, inProcess bool) {
	nc := freshConn(t)
	release := make(chan struct{})
	svc, err := Serve(nc, "big", "1.0.0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("a", streamChunk+1))) // the first chunk goes out
		<-release                                                  // the rest waits
		_, _ = w.Write([]byte("the end"))
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(release); _ = svc.Stop() })
	var logs testkit.LogBuffer
	f := &Forwarder{InProcess: inProcess, NC: nc, Timeout: 30 * time.Second}
	srv := httptest.NewServer(httpx.WithRequestID(slog.New(slog.NewTextHandler(&logs, nil)),
		httpx.Recover(httpx.AccessLog(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.Forward(w, r, "big") })))))
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /v1/big HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	conn.Close() // hang up mid-stream

	testkit.Eventually(t, 10*time.Second, "the access-log line", func() bool {
		return strings.Contains(logs.String(), "http request")
	})
	out := logs.String()
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "level=INFO") || !strings.Contains(out, "status=200") ||
		!strings.Contains(out, `cut_short="client went away"`) {
		t.Fatalf("logged:\n%s", out)
	}
}
