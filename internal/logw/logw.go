// Package logw batches a process's log lines into fewer writes. A line is
// handed to a goroutine that writes whatever has queued by then in one
// write, at once: under concurrent requests the lines of several go out
// together, and the process reading the log (journald, a pipe) is woken
// once for them, not once a line. Order is kept. Lines of level error and
// above, and Flush, write everything queued before returning; so does
// Close, after which writes go straight through. What a SIGKILL cuts off is
// only what was queued at that instant.
package logw

import (
	"io"
	"sync"

	"github.com/rs/zerolog"
)

// maxQueued bounds the bytes queued: a Write past it waits for the writer.
const maxQueued = 1 << 20

// Writer batches writes to w.
type Writer struct {
	w io.Writer

	mu     sync.Mutex
	room   *sync.Cond // signalled when the queue is taken
	queue  []byte
	closed bool

	wmu  sync.Mutex // held while writing to w
	out  []byte     // the batch being written (under wmu)
	err  error      // the first error w returned (under wmu)
	wake chan struct{}
	done chan struct{}
}

var _ zerolog.LevelWriter = (*Writer)(nil)

// New starts a Writer on w; Close stops it.
func New(w io.Writer) *Writer {
	b := &Writer{w: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
	b.room = sync.NewCond(&b.mu)
	go b.loop()
	return b
}

// Write queues p (a whole line) and returns.
func (b *Writer) Write(p []byte) (int, error) {
	b.mu.Lock()
	for len(b.queue) >= maxQueued && !b.closed {
		b.room.Wait()
	}
	if b.closed {
		b.mu.Unlock()
		b.wmu.Lock()
		defer b.wmu.Unlock()
		return b.w.Write(p)
	}
	b.queue = append(b.queue, p...)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// WriteLevel is Write, then Flush for error and above: such a line is out
// when the call returns (a Fatal's before the exit).
func (b *Writer) WriteLevel(l zerolog.Level, p []byte) (int, error) {
	n, err := b.Write(p)
	if l >= zerolog.ErrorLevel {
		b.Flush()
	}
	return n, err
}

// Flush writes everything queued and returns when it is written.
func (b *Writer) Flush() {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	b.writeQueued()
}

// writeQueued takes the queue and writes it; called with wmu.
func (b *Writer) writeQueued() {
	b.mu.Lock()
	b.out, b.queue = b.queue, b.out[:0]
	b.room.Broadcast()
	b.mu.Unlock()
	if len(b.out) == 0 {
		return
	}
	if _, err := b.w.Write(b.out); err != nil && b.err == nil {
		b.err = err
	}
	if cap(b.out) > 4*maxQueued { // do not keep a burst's buffer
		b.out = nil
	}
}

func (b *Writer) loop() {
	defer close(b.done)
	for range b.wake {
		b.Flush()
	}
}

// Close writes what is queued and stops the goroutine; later writes go
// straight to w. It returns the first error w returned.
func (b *Writer) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.room.Broadcast()
	b.mu.Unlock()
	close(b.wake)
	<-b.done
	b.Flush()
	b.wmu.Lock()
	defer b.wmu.Unlock()
	return b.err
}
