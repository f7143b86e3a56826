package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
)

// wireClient sends one prepared HTTP/1.1 request on one kept-alive
// connection and reads the answer on the caller's goroutine. The bench
// client shares the process (and its 2 cores and its GC) with what it
// measures: net/http's client adds two goroutines per connection, a
// hand-off each way and some 5 KB of garbage per request, a tail of its
// own; this one adds next to nothing.
type wireClient struct {
	conn    net.Conn
	br      *bufio.Reader
	request []byte
}

func dialWire(addr, method, path string, header http.Header) (*wireClient, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, addr)
	if err := header.Write(&b); err != nil {
		return nil, err
	}
	b.WriteString("\r\n")
	return &wireClient{conn: conn, br: bufio.NewReaderSize(conn, 64<<10), request: b.Bytes()}, nil
}

// do sends the request and reads the whole answer, returning its status.
func (c *wireClient) do() (int, error) {
	if _, err := c.conn.Write(c.request); err != nil {
		return 0, err
	}
	line, err := c.line()
	if err != nil {
		return 0, err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, fmt.Errorf("wire client: status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("wire client: status line %q", line)
	}
	length, chunked := -1, false
	for {
		line, err := c.line()
		if err != nil {
			return 0, err
		}
		if len(line) == 0 {
			break
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return 0, fmt.Errorf("wire client: Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		}
	}
	switch {
	case chunked:
		_, err = io.Copy(io.Discard, httputil.NewChunkedReader(c.br))
		if err == nil {
			_, err = c.line() // the empty trailer
		}
	case length >= 0:
		_, err = c.br.Discard(length)
	default:
		err = errors.New("wire client: an answer without a length")
	}
	return status, err
}

// line reads one header line without its CRLF; it stays valid until the
// next read.
func (c *wireClient) line() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

func (c *wireClient) Close() error { return c.conn.Close() }

// discardWriter is a ResponseWriter for the in-process measurements that
// keeps the status and reuses its header map, so the bench's own garbage
// does not trigger the collections it measures.
type discardWriter struct {
	header http.Header
	code   int
}

func (w *discardWriter) reset() {
	clear(w.header)
	w.code = 0
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}
