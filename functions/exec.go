package functions

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// DefaultKillGrace is how long a cancelled child has between SIGTERM and
// SIGKILL.
const DefaultKillGrace = 5 * time.Second

// logKeyStderr is the log key of a line the child wrote to stderr.
const logKeyStderr = "function_stderr"

const (
	// maxStderrLineBytes caps one logged stderr line.
	maxStderrLineBytes = 1 << 10
	// maxStderrLines caps the stderr lines logged per call.
	maxStderrLines = 100
	// ioDrainTimeout bounds the wait for the child's stdout and stderr to
	// reach end of file once the child has exited and its process group
	// has been killed; only a process that left the group can hold them
	// open longer.
	ioDrainTimeout = time.Second
)

// ExecBackend calls a function by running a child process: JSON input on
// stdin, JSON result on stdout, stderr to the log.
type ExecBackend struct {
	Argv []string
	Dir  string
	// Env is added to a minimal environment, as KEY=VALUE. Values are
	// resolved at load and must never be logged.
	Env []string
	// KillGrace is the time between SIGTERM and SIGKILL on cancel; 0
	// means DefaultKillGrace.
	KillGrace time.Duration
	// MaxOutputBytes caps stdout; 0 means DefaultMaxResponseBytes.
	MaxOutputBytes int64
}

// Kind returns "exec".
func (b *ExecBackend) Kind() string { return "exec" }

// Invoke runs the child once, in a process group of its own, with input on
// its stdin. Its stderr goes to the log of ctx (zerolog.Ctx), line by line
// and capped; its stdin and stdout are never logged. When ctx is done the
// group gets SIGTERM, and SIGKILL after KillGrace. When the child exits,
// whatever it left running in its group is killed. Invoke returns only
// after the child has been reaped and its stdout and stderr closed (or,
// if a process that left the group holds them, after ioDrainTimeout), and
// leaves no goroutine behind.
//
// Its *CallError reasons are "call canceled" and "call timed out" once ctx
// is done, "function could not be started", "function output exceeds <N>
// bytes", "function exited with status <N>", "function was killed by
// signal <N>", "function failed" (a wait error), and those of the contract
// (see parseResult) when it exits with status 0.
func (b *ExecBackend) Invoke(ctx context.Context, input json.RawMessage) (Result, error) {
	if ctx.Err() != nil {
		return Result{}, contextError(ctx)
	}
	if len(b.Argv) == 0 || b.Argv[0] == "" {
		return Result{}, &CallError{Reason: "function could not be started", Err: errors.New("empty argv")}
	}
	limit := b.MaxOutputBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	grace := b.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}

	p, err := b.start()
	if err != nil {
		return Result{}, &CallError{Reason: "function could not be started", Err: err}
	}
	defer p.close()

	var (
		wg       sync.WaitGroup
		out      []byte
		lastLine string
		waitc    = make(chan error, 1)
		overflow = make(chan struct{})
	)
	wg.Add(4)
	go func() {
		defer wg.Done()
		// A child that does not read its input makes this fail; that is
		// its business.
		_, _ = p.stdin.Write(input)
		_ = p.stdin.Close()
	}()
	go func() {
		defer wg.Done()
		out = readLimited(p.stdout, limit, overflow)
	}()
	go func() {
		defer wg.Done()
		lastLine = logStderr(ctx, p.stderr)
	}()
	go func() {
		defer wg.Done()
		waitc <- p.cmd.Wait()
	}()

	var (
		werr    error
		stopped *CallError // why Invoke stopped the child, if it did
	)
	select {
	case werr = <-waitc:
	case <-overflow:
		p.kill(syscall.SIGKILL)
		werr = <-waitc
	case <-ctx.Done():
		stopped = contextError(ctx)
		p.kill(syscall.SIGTERM)
		t := time.NewTimer(grace)
		select {
		case werr = <-waitc:
		case <-t.C:
			p.kill(syscall.SIGKILL)
			werr = <-waitc
		}
		t.Stop()
	}
	// The child is reaped: kill what it left behind, and stop waiting for
	// output from anything that escaped its group.
	p.kill(syscall.SIGKILL)
	p.stopIO(time.Now().Add(ioDrainTimeout))
	wg.Wait()

	switch {
	case stopped != nil:
		return Result{}, stopped
	case int64(len(out)) > limit:
		return Result{}, &CallError{Reason: fmt.Sprintf("function output exceeds %d bytes", limit)}
	case werr != nil:
		return Result{}, exitError(werr, lastLine)
	}
	return parseResult(out)
}

// process is a started child and the parent's ends of its pipes.
type process struct {
	cmd    *exec.Cmd
	pgid   int
	stdin  *os.File
	stdout *os.File
	stderr *os.File
}

// start starts the child with its stdio on pipes, in a new process group.
func (b *ExecBackend) start() (*process, error) {
	cmd := exec.Command(b.Argv[0], b.Argv[1:]...)
	cmd.Dir = b.Dir
	cmd.Env = b.environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	// Pipes made by os.Pipe are non-blocking on the parent's side, so
	// that deadlines can stop reads and writes.
	var files []*os.File // every end, closed on failure
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	fail := func(err error) (*process, error) {
		for _, f := range files {
			_ = f.Close()
		}
		return nil, err
	}
	stdinR, stdinW, err := pipe()
	if err != nil {
		return fail(fmt.Errorf("stdin pipe: %w", err))
	}
	stdoutR, stdoutW, err := pipe()
	if err != nil {
		return fail(fmt.Errorf("stdout pipe: %w", err))
	}
	stderrR, stderrW, err := pipe()
	if err != nil {
		return fail(fmt.Errorf("stderr pipe: %w", err))
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	// The child has its own copies now.
	_ = stdinR.Close()
	_ = stdoutW.Close()
	_ = stderrW.Close()
	return &process{cmd: cmd, pgid: cmd.Process.Pid, stdin: stdinW, stdout: stdoutR, stderr: stderrR}, nil
}

// environ is the child's environment: PATH, HOME and LANG from this
// process where set, then Env.
func (b *ExecBackend) environ() []string {
	env := make([]string, 0, 3+len(b.Env))
	for _, k := range []string{"PATH", "HOME", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, b.Env...)
}

// kill sends sig to the child's whole process group. A group that is
// already gone is not an error.
func (p *process) kill(sig syscall.Signal) {
	_ = syscall.Kill(-p.pgid, sig)
}

// stopIO makes pending and later I/O on the pipes fail: writes at once,
// reads after deadline, so that the goroutines using them return.
func (p *process) stopIO(deadline time.Time) {
	_ = p.stdin.SetWriteDeadline(time.Now())
	for _, f := range []*os.File{p.stdout, p.stderr} {
		if err := f.SetReadDeadline(deadline); err != nil && !errors.Is(err, os.ErrClosed) {
			// Not pollable: closing is the only way to stop a read.
			_ = f.Close()
		}
	}
}

// close closes the parent's ends of the pipes.
func (p *process) close() {
	_ = p.stdin.Close()
	_ = p.stdout.Close()
	_ = p.stderr.Close()
}

// readLimited reads r to its end and returns what it read, keeping at most
// limit+1 bytes. It closes overflow, and returns, as soon as there is more
// than limit.
func readLimited(r io.Reader, limit int64, overflow chan<- struct{}) []byte {
	var buf []byte
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			room := limit + 1 - int64(len(buf))
			if int64(n) > room {
				n = int(room)
			}
			buf = append(buf, chunk[:n]...)
			if int64(len(buf)) > limit {
				close(overflow)
				return buf
			}
		}
		if err != nil {
			return buf
		}
	}
}

// logStderr logs each line read from r as a warning on the logger of ctx,
// at most maxStderrLines lines of at most maxStderrLineBytes, and reads r
// to its end. It returns the last line, truncated.
func logStderr(ctx context.Context, r io.Reader) string {
	l := zerolog.Ctx(ctx)
	br := bufio.NewReaderSize(r, maxStderrLineBytes)
	var (
		line  []byte
		last  string
		lines int
	)
	for {
		frag, isPrefix, err := br.ReadLine()
		if len(line) < maxStderrLineBytes {
			line = append(line, frag[:min(len(frag), maxStderrLineBytes-len(line))]...)
		}
		if err == nil && isPrefix {
			continue
		}
		if err == nil || len(line) > 0 {
			last = truncateUTF8(string(line), maxStderrLineBytes)
			lines++
			switch {
			case lines <= maxStderrLines:
				l.Warn().Str(logKeyStderr, last).Msg("function stderr")
			case lines == maxStderrLines+1:
				l.Warn().Int("lines_logged", maxStderrLines).Msg("function stderr truncated")
			}
		}
		line = line[:0]
		if err != nil {
			return last
		}
	}
}

// exitError is the CallError for a child that did not exit with status 0.
func exitError(err error, lastLine string) *CallError {
	cause := err
	if lastLine != "" {
		cause = fmt.Errorf("%w (last stderr line %q)", err, lastLine)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &CallError{Reason: fmt.Sprintf("function was killed by signal %d", int(ws.Signal())), Err: cause}
		}
		return &CallError{Reason: fmt.Sprintf("function exited with status %d", ee.ExitCode()), Err: cause}
	}
	return &CallError{Reason: "function failed", Err: cause}
}
