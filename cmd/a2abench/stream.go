package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"
)

// maxSSELine bounds one line of a stream (an event's data line).
const maxSSELine = 1 << 20

// sseEvent is one server-sent event.
type sseEvent struct {
	id    string // the event's id field ("" without one)
	event string // the event's type field ("" without one)
	data  []byte // its data lines joined by "\n"; valid until the next call of next
}

// sseReader reads server-sent events (the text/event-stream format of the
// HTML standard): lines ending in "\n" or "\r\n"; "field: value" lines,
// with one optional space after the colon; lines starting with ":" are
// comments (keep-alives); a blank line ends an event. An event with no
// data line is not reported, and an event cut off by the end of the
// stream is dropped, as a browser does.
type sseReader struct {
	r    *bufio.Reader
	line []byte
	ev   sseEvent
	data []byte
	// firstData is when the first complete data line of the stream was
	// read; zero before.
	firstData time.Time
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 4096)}
}

// reset makes p read a new stream from r, reusing its buffers.
func (p *sseReader) reset(r io.Reader) {
	p.r.Reset(r)
	p.firstData = time.Time{}
}

// next returns the next event, or io.EOF at the end of the stream.
func (p *sseReader) next() (sseEvent, error) {
	p.ev = sseEvent{}
	p.data = p.data[:0]
	hasData := false
	for {
		line, err := p.readLine()
		if err != nil {
			if err == io.EOF {
				return sseEvent{}, io.EOF // a pending event is dropped
			}
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if !hasData {
				p.ev = sseEvent{}
				continue // blank line after comments or fields without data
			}
			p.ev.data = p.data
			return p.ev, nil
		}
		if line[0] == ':' {
			continue // a comment
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if p.firstData.IsZero() {
				p.firstData = time.Now()
			}
			if hasData {
				p.data = append(p.data, '\n')
			}
			p.data = append(p.data, value...)
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				p.ev.id = string(value)
			}
		case "event":
			p.ev.event = string(value)
		}
		// Other fields (retry, unknown ones) are ignored.
	}
}

// readLine returns the next line without its end of line, valid until
// the next call. A last line without an end of line is dropped (io.EOF).
func (p *sseReader) readLine() ([]byte, error) {
	p.line = p.line[:0]
	for {
		frag, err := p.r.ReadSlice('\n')
		if len(p.line)+len(frag) > maxSSELine {
			return nil, fmt.Errorf("stream line longer than %d bytes", maxSSELine)
		}
		switch {
		case err == nil:
			var line []byte
			if len(p.line) == 0 {
				line = frag
			} else {
				p.line = append(p.line, frag...)
				line = p.line
			}
			line = line[:len(line)-1]
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			p.line = append(p.line, frag...)
		default:
			return nil, err // io.EOF drops an unterminated last line
		}
	}
}

// checkEvent checks one event's data: a JSON-RPC result for request id.
// final reports the event that ends the stream (a 0.3 status-update with
// "final":true, a 1.0 one in a terminal or interrupted state); such an
// event must hold the completed state.
func (p *protocol) checkEvent(data []byte, id int64) (final bool, err error) {
	ev, err := p.decode(data, id, "event")
	if err != nil || !ev.final {
		return false, err
	}
	if ev.state != "completed" {
		return true, fmt.Errorf("final status-update in state %q, want completed", ev.state)
	}
	return true, nil
}

// readStream reads one stream's events for request id to the end. It
// returns the number of events and an error unless the last event is a
// final, completed status-update.
func readStream(p *sseReader, proto *protocol, id int64) (events int, err error) {
	final := false
	for {
		ev, err := p.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return events, err
		}
		events++
		if final {
			return events, errors.New("an event after the final status-update")
		}
		if final, err = proto.checkEvent(ev.data, id); err != nil {
			return events, err
		}
	}
	if !final {
		return events, fmt.Errorf("the stream ended after %d events without a final status-update", events)
	}
	return events, nil
}

// streamOp is a streaming send (message/stream, or SendStreamingMessage
// in A2A 1.0) whose task emits several events (for a2ad, demo::echo: the
// task, an artifact-update and the final status-update). Its sample is
// the time to first event: from sending the request to reading the first
// complete data line.
func streamOp(proto *protocol) newOp {
	return func(rpcURL string) op {
		var body bytes.Buffer
		p := newSSEReader(nil)
		return func(ctx context.Context, client *http.Client, n int64) (time.Duration, int, error) {
			return streamOnce(ctx, client, rpcURL, proto, &body, p, n)
		}
	}
}

// streamOnce sends one streaming send with a fresh messageId and reads
// its events to the end of the stream.
func streamOnce(ctx context.Context, client *http.Client, rpcURL string, proto *protocol, body *bytes.Buffer, p *sseReader,
	id int64) (time.Duration, int, error) {
	proto.writeRequest(body, id, true)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rpcURL, bytes.NewReader(body.Bytes()))
	if err != nil {
		return 0, 0, err
	}
	proto.setHeaders(req)
	req.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return 0, 0, fmt.Errorf("HTTP %d, Content-Type %q: %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	p.reset(resp.Body)
	events, err := readStream(p, proto, id)
	if err != nil {
		return 0, events, err
	}
	return p.firstData.Sub(start), events, nil
}
