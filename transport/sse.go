package transport

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/internal/tick"
	"github.com/a2ad/a2ad/tasks"
)

// SSE writes one stream as server-sent events: each event's id is its
// sequence in the task (so that Last-Event-ID resumes), its data one line
// of JSON in the binding's shape. Events and keep-alives come from two
// goroutines, so writes are serialised. It is a Sink.
type SSE struct {
	W         http.ResponseWriter
	KeepAlive time.Duration // 0: none
	// Data appends one event's data line (without "data: ").
	Data func(dst []byte, e tasks.StreamEvent) ([]byte, error)
	// ErrorData appends the data line of an error event.
	ErrorData func(dst []byte, e *a2a.Error) []byte

	mu      sync.Mutex
	started bool
	failed  bool
	buf     []byte
	stop    chan struct{}
	wg      sync.WaitGroup
}

var _ Sink = (*SSE)(nil)

// Started implements Sink.
func (sw *SSE) Started() bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.started
}

// Start implements Sink: it writes the headers, once, and starts the
// keep-alives.
func (sw *SSE) Start() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.start()
}

func (sw *SSE) start() {
	if sw.started {
		return
	}
	sw.started = true
	h := sw.W.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no") // proxies must not buffer the stream
	sw.W.WriteHeader(http.StatusOK)
	if sw.KeepAlive > 0 {
		stop := make(chan struct{})
		sw.stop = stop
		sw.wg.Add(1)
		go func() {
			defer sw.wg.Done()
			tick.Every(stop, sw.KeepAlive, func() {
				sw.mu.Lock()
				sw.write([]byte(": keep-alive\n\n"))
				sw.mu.Unlock()
			})
		}()
	}
}

// sseWriteTimeout bounds one write to a stream: a client that keeps the
// connection open but stops reading is cut off, rather than holding its
// handler, keep-alive goroutine and in-flight slot until shutdown.
const sseWriteTimeout = 30 * time.Second

// write writes and flushes; the caller holds mu (or owns sw alone).
func (sw *SSE) write(b []byte) {
	if sw.failed {
		return
	}
	// Not every ResponseWriter supports deadlines (a test recorder does
	// not); the stream works without one.
	_ = http.NewResponseController(sw.W).SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	if _, err := sw.W.Write(b); err != nil {
		sw.failed = true
		return
	}
	if err := http.NewResponseController(sw.W).Flush(); err != nil {
		sw.failed = true
	}
}

// Event implements Sink.
func (sw *SSE) Event(e tasks.StreamEvent) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.start()
	b := append(sw.buf[:0], "id: "...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, "\ndata: "...)
	b, err := sw.Data(b, e)
	if err != nil {
		return err
	}
	b = append(b, "\n\n"...)
	sw.buf = b
	sw.write(b)
	if sw.failed {
		return ErrWrite
	}
	return nil
}

// Fail implements Sink: it writes e as the stream's last event. On a
// stream not started yet, it starts it: the answer is that one event.
func (sw *SSE) Fail(e *a2a.Error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.start()
	b := sw.ErrorData(append(sw.buf[:0], "data: "...), e)
	sw.write(append(b, '\n', '\n'))
}

// Close implements Sink: it stops the keep-alives and waits for them.
func (sw *SSE) Close() {
	sw.mu.Lock()
	stop := sw.stop
	sw.stop = nil
	sw.mu.Unlock()
	if stop != nil {
		close(stop)
		sw.wg.Wait()
	}
}
