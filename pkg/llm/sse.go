package llm

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// A small reader of server-sent events (the WHATWG event-stream format),
// bounded for untrusted endpoints: a line longer than maxLine is an error,
// never a growing buffer. It reads what chat-completions and Responses
// streams use: "event:" and "data:" fields (several data lines joined with
// "\n"), comments (":" lines, keep-alives) ignored, an event dispatched at
// a blank line. An event left without its blank line when the stream ends
// is dispatched too: some servers close right after "data: [DONE]".

// errLineTooLong: a line of the stream is longer than the reader accepts.
var errLineTooLong = errors.New("line too long")

type sseEvent struct {
	name string // the "event:" field, "" when none
	data []byte // the data lines, joined with "\n"
	line int    // the number of the event's first data line, from 1
}

type sseReader struct {
	r       *bufio.Reader
	maxLine int
	lines   int // lines read so far
	buf     []byte
	// comment, when set, is called for each comment line (a keep-alive).
	comment func()
}

func newSSEReader(r io.Reader, maxLine int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 4096), maxLine: maxLine}
}

// readLine answers the next line without its end ("\n", "\r\n"; a lone
// "\r" is kept: no server of these APIs ends lines with it), or io.EOF
// when the stream ended cleanly with no partial line, or the read error.
func (s *sseReader) readLine() ([]byte, error) {
	s.buf = s.buf[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		if len(s.buf)+len(chunk) > s.maxLine+2 {
			return nil, errLineTooLong
		}
		s.buf = append(s.buf, chunk...)
		switch {
		case err == nil:
			s.lines++
			line := bytes.TrimSuffix(s.buf[:len(s.buf)-1], []byte{'\r'})
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(s.buf) > 0:
			s.lines++
			return bytes.TrimSuffix(s.buf, []byte{'\r'}), nil // a last line without its end
		default:
			return nil, err
		}
	}
}

// next answers the next event. At the end of the stream it answers
// io.EOF (a clean end) or the read error (a cut connection, a time-out).
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && hasData {
				return ev, nil
			}
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if hasData {
				return ev, nil
			}
			ev.name = "" // an event with no data is not dispatched
			continue
		}
		if line[0] == ':' {
			if s.comment != nil {
				s.comment()
			}
			continue // a comment
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "event":
			ev.name = string(value)
		case "data":
			if hasData {
				if len(ev.data)+1+len(value) > s.maxLine {
					return sseEvent{}, errLineTooLong
				}
				ev.data = append(ev.data, '\n')
			} else {
				ev.line = s.lines
				ev.data = make([]byte, 0, len(value))
			}
			hasData = true
			ev.data = append(ev.data, value...)
		}
		// id and retry mean nothing to a one-shot request
	}
}
