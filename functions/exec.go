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
	"runtime"
	"sync"
	"sync/atomic"
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
	// open longer. Time spent reporting progress between reads of stdout
	// does not count.
	ioDrainTimeout = time.Second
)

// ExecBackend calls a function by running a child process: JSON input on
// stdin, progress lines and then the JSON result on stdout, stderr to the
// log.
type ExecBackend struct {
	Argv []string
	Dir  string
	// Env is added to a minimal environment, as KEY=VALUE. Values are
	// resolved at load and must never be logged.
	Env []string
	// KillGrace is the time between SIGTERM and SIGKILL on cancel; 0
	// means DefaultKillGrace.
	KillGrace time.Duration
	// MaxOutputBytes caps the result on stdout, and each line; 0 means
	// DefaultMaxResponseBytes. All of stdout, progress lines included, is
	// capped at 4 times as much.
	MaxOutputBytes int64
	// Nice is the niceness the child runs at (0 to 19; the catalogue's
	// default is DefaultNice), and its children after it, so that a busy
	// function slows other functions before it slows a2ad's own request
	// handling. The child inherits it from the thread that starts it.
	Nice int
}

// DefaultNice is the niceness of an exec child whose catalogue entry sets
// none.
const DefaultNice = 10

// Kind returns "exec".
func (b *ExecBackend) Kind() string { return "exec" }

// Invoke runs the child once, in a process group of its own, with input on
// its stdin and the variables of the call in ctx (see Call.Environ and,
// when traced, traceEnv) in its environment. On Linux the child is killed when a2ad dies (see sysProcAttr),
// and so is what it started (see watchGroup),
// and once it has started its group is reported to the StartedFunc of ctx
// (see WithStarted), before its output is read. Its stdout is read while it runs: each progress line is
// reported to ReportProgress(ctx) as it arrives (see readOutput), and the
// other lines are the result. Its stderr goes to the log of ctx
// (zerolog.Ctx), line by line and capped; its stdin and stdout are never
// logged. When ctx is done the group gets SIGTERM, and SIGKILL after
// KillGrace. When the child exits, whatever it left running in its group
// is killed. Invoke returns only after the child has been reaped and its
// stdout and stderr closed (or, if a process that left the group holds
// them, after ioDrainTimeout of waiting for them), and leaves no goroutine
// behind.
//
// Its *CallError reasons are "call canceled" and "call timed out" once ctx
// is done, "function could not be started", "function output exceeds <N>
// bytes" (N is MaxOutputBytes for the result or a line, 4 times that for
// all of stdout), "function wrote a malformed progress line", "function
// exited with status <N>", "function was killed by signal <N>", "function
// failed" (a wait error), and those of the contract (see parseResult) when
// it exits with status 0. A too large or malformed output kills the child
// at once.
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

	var (
		wg       sync.WaitGroup
		out      []byte
		outErr   error // from readOutput
		lastLine string
		startc   = make(chan started, 1)
		waitc    = make(chan error, 1)
		failed   = make(chan struct{}) // closed if the output fails the call
	)
	call, _ := CallFrom(ctx)
	env := traceEnv(ctx, call.Environ(b.environ()))
	wg.Go(func() {
		b.runChild(env, startc, waitc)
	})
	st := <-startc
	if st.err != nil {
		wg.Wait()
		return Result{}, &CallError{Reason: "function could not be started", Err: st.err}
	}
	p := st.p
	defer p.close()
	if st.grouped {
		reportStarted(ctx, st.group)
	}

	wg.Go(func() {
		// A child that does not read its input makes this fail; that is
		// its business.
		_, _ = p.stdin.Write(input)
		_ = p.stdin.Close()
	})
	wg.Go(func() {
		out, outErr = readOutput(ctx, &stdoutReader{p: p, left: ioDrainTimeout}, limit)
		if outputFailed(outErr) {
			close(failed)
		}
	})
	wg.Go(func() {
		lastLine = logStderr(ctx, p.stderr)
	})

	stopped, werr := waitChild(ctx, p, waitc, failed, grace)
	// The child is reaped: kill what it left behind (the watcher too),
	// and stop waiting for output from anything that escaped its group.
	p.kill(syscall.SIGKILL)
	p.watch.stop()
	p.stopIO(time.Now().Add(ioDrainTimeout))
	wg.Wait()

	switch {
	case stopped != nil:
		return Result{}, stopped
	case outputFailed(outErr):
		return Result{}, outputCallError(outErr, "output")
	case werr != nil:
		return Result{}, exitError(werr, lastLine)
	}
	return parseResult(ctx, out)
}

// waitChild waits until the child p exits (waitc yields its wait error).
// It kills the child at once if its output fails the call (failed is
// closed), and stops it if ctx ends: SIGTERM, then SIGKILL after grace;
// stopped then says why.
func waitChild(ctx context.Context, p *process, waitc <-chan error, failed <-chan struct{}, grace time.Duration) (stopped *CallError, werr error) {
	select {
	case werr = <-waitc:
	case <-failed:
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
	return stopped, werr
}

// started is what runChild reports once it has tried to start the child,
// with the child's process group if it could be read.
type started struct {
	p       *process
	group   ProcessGroup
	grouped bool
	err     error
}

// runChild starts the child, sends the outcome on startc and, if it
// started, waits for it to exit and sends Wait's error on waitc. It runs
// locked to its OS thread until the child has been reaped, because the
// kernel's parent-death signal (see sysProcAttr) fires when the thread
// that started the child ends: while locked, no other goroutine uses the
// thread, and the runtime never ends a thread that a running goroutine
// holds. It unlocks before returning, so the thread is kept, unless it
// was made nicer for the child (see niceThread): a thread cannot be made
// less nice again without privilege, so it ends with this goroutine (a
// goroutine that exits locked ends its thread) and nothing else runs at
// its niceness.
func (b *ExecBackend) runChild(env []string, startc chan<- started, waitc chan<- error) {
	runtime.LockOSThread()
	if b.Nice <= 0 || !niceThread(b.Nice) {
		defer runtime.UnlockOSThread()
	}
	p, err := b.start(env)
	if err != nil {
		startc <- started{err: err}
		return
	}
	// The group is read, and its watcher joins it, before Wait can reap
	// its leader: a child that exits at once, leaving processes in its
	// group, would otherwise be gone from /proc before Invoke looked, and
	// its group unrecorded.
	p.watch = watchGroup(p.pgid)
	g, grouped := groupOf(p.pgid)
	startc <- started{p: p, group: g, grouped: grouped}
	waitc <- p.cmd.Wait()
}

// process is a started child and the parent's ends of its pipes.
type process struct {
	cmd    *exec.Cmd
	pgid   int
	stdin  *os.File
	stdout *os.File
	stderr *os.File
	// draining is set by stopIO, once the deadlines are set.
	draining atomic.Bool
	// watch kills the group if a2ad dies first; nil without one.
	watch *groupWatch
}

// start starts the child with env, its call's environment, and its
// stdio on pipes, in a new process group.
func (b *ExecBackend) start(env []string) (*process, error) {
	cmd := exec.Command(b.Argv[0], b.Argv[1:]...)
	cmd.Dir = b.Dir
	cmd.Env = env
	cmd.SysProcAttr = sysProcAttr()

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

// environ is the child's environment before its call's variables: PATH,
// HOME and LANG from this process where set, then Env.
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
// reads after deadline, so that the goroutines using them return. Reads of
// stdout through a stdoutReader get a deadline of their own afterwards.
func (p *process) stopIO(deadline time.Time) {
	_ = p.stdin.SetWriteDeadline(time.Now())
	for _, f := range []*os.File{p.stdout, p.stderr} {
		if err := f.SetReadDeadline(deadline); err != nil && !errors.Is(err, os.ErrClosed) {
			// Not pollable: closing is the only way to stop a read.
			_ = f.Close()
		}
	}
	p.draining.Store(true)
}

// stdoutReader reads the child's stdout. Once stopIO has run, the reads it
// starts may wait for output for left in all: the time its caller spends
// between reads (reporting progress, which may block) does not count, so
// that output already written is not lost. A read under way when stopIO
// runs is bounded by the deadline of stopIO.
type stdoutReader struct {
	p    *process
	left time.Duration
}

func (r *stdoutReader) Read(b []byte) (int, error) {
	if !r.p.draining.Load() {
		return r.p.stdout.Read(b)
	}
	start := time.Now()
	_ = r.p.stdout.SetReadDeadline(start.Add(r.left))
	n, err := r.p.stdout.Read(b)
	r.left -= time.Since(start)
	return n, err
}

// close closes the parent's ends of the pipes.
func (p *process) close() {
	_ = p.stdin.Close()
	_ = p.stdout.Close()
	_ = p.stderr.Close()
}

// logStderr logs each line read from r at info level on the logger of ctx
// (which names the task and the function: a function's stderr is its
// author's trace, not a2ad's warning),
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
				l.Info().Str(logKeyStderr, last).Msg("function stderr")
			case lines == maxStderrLines+1:
				l.Info().Int("lines_logged", maxStderrLines).Msg("function stderr truncated")
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
