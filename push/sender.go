package push

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

const (
	// senderMaxResponse is how much of a response body is read (and
	// discarded), so that the connection can be reused.
	senderMaxResponse = 64 << 10
	// senderRecordTimeout bounds the outbox write that records an
	// attempt's outcome; it runs even while the sender shuts down.
	senderRecordTimeout = 5 * time.Second
	// senderMaxErrorDelay caps the wait between polls while Due fails.
	senderMaxErrorDelay = time.Minute
	// senderErrorLogEvery rate-limits the log of a failing Due.
	senderErrorLogEvery = time.Minute
)

// errSenderClosed is the cause given to in-flight attempts that Close
// cuts short.
var errSenderClosed = errors.New("push sender closed")

// SenderConfig configures a Sender. Zero values take the defaults.
type SenderConfig struct {
	// Outbox holds the deliveries and their state; required.
	Outbox Outbox
	// Client sends the POSTs (the SSRF-guarded client). Nil means a
	// plain client with Timeout. Redirects are never followed, whatever
	// the client's CheckRedirect says.
	Client *http.Client
	// Timeout bounds one attempt, reading the response included;
	// default 10s.
	Timeout time.Duration
	// MaxAttempts is how many attempts a delivery gets before it is
	// dead-lettered; default 8.
	MaxAttempts int
	// BaseDelay and MaxDelay shape the backoff after a failed attempt n
	// (1-based): a random delay in [0, min(MaxDelay, BaseDelay*2^(n-1)))
	// (full jitter); defaults 1s and 5m.
	BaseDelay, MaxDelay time.Duration
	// Concurrency bounds the attempts in flight at once, across all
	// (task, config) pairs; default 16.
	Concurrency int
	// PollInterval is how often the outbox is polled when nothing wakes
	// the sender; default 1s.
	PollInterval time.Duration
	Logger       zerolog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Rand returns a number in [0, 1) for the jitter; default
	// math/rand/v2's Float64.
	Rand func() float64
	// OnAttempt, when set, is told of each attempt that ended (not one
	// Close cut short): its outcome, one of AttemptDelivered,
	// AttemptTransient and AttemptPermanent; whether it dead-lettered
	// the delivery; and how long the POST took. It must be quick. A
	// delivery whose request cannot be built counts as a transient
	// failure; one dropped because its task is gone is no attempt.
	OnAttempt func(outcome string, dead bool, d time.Duration)
}

// The outcomes of an attempt, as OnAttempt is told them.
const (
	AttemptDelivered = "delivered"       // a 2xx answer
	AttemptTransient = "transient_error" // a network error, a timeout, a 5xx or 429: retried
	AttemptPermanent = "permanent_error" // another answer or an unusable request: never retried
)

// Sender delivers the outbox's deliveries: at most Concurrency attempts
// at once, at most one per (task, config) so that a pair's deliveries
// arrive in order, retrying with backoff and dead-lettering after
// MaxAttempts or at once on a permanent failure. All its state is in the
// Outbox: a new Sender on the same Outbox resumes where the last one
// stopped.
type Sender struct {
	cfg    SenderConfig
	client *http.Client
	log    zerolog.Logger

	// ctx ends the loop (Close); attemptCtx ends in-flight attempts
	// (Close, once its own context is done).
	ctx           context.Context
	cancel        context.CancelFunc
	attemptCtx    context.Context
	cancelAttempt context.CancelCauseFunc

	wake chan struct{}
	// done carries the pair of each attempt that ended back to the
	// loop; it has room for every attempt in flight, so sends never
	// block.
	done chan senderPair

	mu       sync.Mutex
	started  bool
	loopDone chan struct{}
	wg       sync.WaitGroup // attempts

	// inflight (each pair's delivery id) and renewed (when its claims
	// were last renewed) are owned by the loop goroutine, then by the
	// first Close.
	inflight map[senderPair]uint64
	renewed  time.Time
	closing  atomic.Bool // the first Close has taken inflight over
}

// senderPair identifies a (task, config): one delivery in flight each.
type senderPair struct{ taskID, configID string }

// orDefault sets *v to def unless *v is positive.
func orDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// NewSender returns a Sender for cfg; Start starts it. It panics if
// cfg.Outbox is nil.
func NewSender(cfg SenderConfig) *Sender {
	if cfg.Outbox == nil {
		panic("push: NewSender: nil Outbox")
	}
	orDefault(&cfg.Timeout, 10*time.Second)
	orDefault(&cfg.MaxAttempts, 8)
	orDefault(&cfg.BaseDelay, time.Second)
	orDefault(&cfg.MaxDelay, 5*time.Minute)
	orDefault(&cfg.Concurrency, 16)
	orDefault(&cfg.PollInterval, time.Second)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}

	var client http.Client
	if cfg.Client != nil {
		client = *cfg.Client // a shallow copy shares the transport
	} else {
		client.Timeout = cfg.Timeout
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	s := &Sender{
		cfg:      cfg,
		client:   &client,
		log:      cfg.Logger,
		wake:     make(chan struct{}, 1),
		done:     make(chan senderPair, cfg.Concurrency),
		loopDone: make(chan struct{}),
		inflight: make(map[senderPair]uint64),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.attemptCtx, s.cancelAttempt = context.WithCancelCause(context.Background())
	return s
}

// Start starts polling the outbox in a goroutine the Sender owns. Calls
// after the first, or after Close, do nothing.
func (s *Sender) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.ctx.Err() != nil {
		return
	}
	s.started = true
	go s.loop()
}

// Wake tells the sender that deliveries may be due, so it polls now
// rather than at the next PollInterval. It never blocks.
func (s *Sender) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close stops polling and waits for the attempts in flight to end. If
// ctx ends first, it cancels them (their deliveries stay in the outbox
// as they were, to be sent again) and returns ctx.Err() once they have
// returned. Every goroutine the Sender started has ended when Close
// returns.
func (s *Sender) Close(ctx context.Context) error {
	s.mu.Lock()
	s.cancel()
	started := s.started
	s.mu.Unlock()
	if started {
		<-s.loopDone // no attempt starts after this
	}

	waited := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(waited)
	}()
	err := s.waitAttempts(ctx, waited)
	s.cancelAttempt(errSenderClosed)
	return err
}

// waitAttempts waits until waited is closed (the attempts in flight have
// ended), cutting them short once ctx is done, and then returns
// ctx.Err(). Meanwhile the first Close, which owns inflight once the
// loop has ended, renews their claims as the loop did: else another
// process would send their deliveries while they still run.
func (s *Sender) waitAttempts(ctx context.Context, waited <-chan struct{}) error {
	var (
		tick <-chan time.Time
		done <-chan senderPair
	)
	if s.closing.CompareAndSwap(false, true) {
		t := time.NewTicker(s.cfg.PollInterval)
		defer t.Stop()
		tick, done = t.C, s.done
	}
	for {
		select {
		case <-waited:
			return nil
		case p := <-done:
			delete(s.inflight, p)
		case <-tick:
			if err := s.renew(); err != nil {
				s.log.Error().Err(err).Msg("push claims renewal failed while closing")
			}
		case <-ctx.Done():
			select {
			case <-waited: // they ended in time after all
				return nil
			default:
			}
			s.cancelAttempt(errSenderClosed)
			<-waited
			return ctx.Err()
		}
	}
}

// loop polls the outbox whenever an attempt ends, Wake is called or
// PollInterval passes, until Close. While Due fails, it polls only on the
// timer, with a capped exponential backoff, except while it has claims
// to renew (Claims) on deliveries in flight: then every PollInterval.
func (s *Sender) loop() {
	defer close(s.loopDone)
	timer := time.NewTimer(s.cfg.PollInterval)
	defer timer.Stop()

	var (
		fails   int
		lastLog time.Time
	)
	poll := true
	for {
		if poll {
			delay := s.cfg.PollInterval
			if err := s.poll(); err != nil {
				if s.ctx.Err() != nil {
					return
				}
				fails++
				delay = doubled(s.cfg.PollInterval, fails, max(s.cfg.PollInterval, senderMaxErrorDelay))
				if _, claims := s.cfg.Outbox.(Claims); claims && len(s.inflight) > 0 {
					// The claims on the deliveries in flight lapse unless
					// renewed: another process would send them too.
					delay = s.cfg.PollInterval
				}
				if time.Since(lastLog) >= senderErrorLogEvery {
					lastLog = time.Now()
					s.log.Error().Err(err).Int("failures", fails).Dur("retry_in", delay).Msg("push outbox poll failed")
				}
			} else if fails > 0 {
				s.log.Info().Int("failures", fails).Msg("push outbox poll recovered")
				fails = 0
				lastLog = time.Time{}
			}
			timer.Reset(delay)
		}

		select {
		case <-s.ctx.Done():
			return
		case p := <-s.done:
			delete(s.inflight, p)
			poll = fails == 0
		case <-s.wake:
			poll = fails == 0
		case <-timer.C:
			poll = true
		}
	}
}

// poll starts an attempt for each due delivery, as far as free slots
// allow, skipping pairs that have an attempt in flight.
func (s *Sender) poll() error {
	if err := s.renew(); err != nil {
		return err
	}
	free := s.cfg.Concurrency - len(s.inflight)
	if free <= 0 {
		return nil
	}
	// A pair in flight still has its delivery due (it stays in the outbox
	// until its outcome is recorded) and Due may return it: ask for enough
	// that those cannot crowd out the others.
	ds, err := s.cfg.Outbox.Due(s.ctx, s.cfg.Now(), free+len(s.inflight))
	if err != nil {
		return fmt.Errorf("due deliveries: %w", err)
	}
	for _, d := range ds {
		if free == 0 {
			break
		}
		p := senderPair{d.TaskID, d.ConfigID}
		if _, busy := s.inflight[p]; busy {
			continue
		}
		s.inflight[p] = d.ID
		free--
		s.wg.Go(func() {
			s.attempt(d)
			s.done <- p // only after the outcome is recorded
		})
	}
	return nil
}

// renew renews the claims on the deliveries in flight, if the outbox
// claims them (Claims), at most twice a PollInterval.
func (s *Sender) renew() error {
	c, ok := s.cfg.Outbox.(Claims)
	if !ok || len(s.inflight) == 0 || time.Since(s.renewed) < s.cfg.PollInterval/2 {
		return nil
	}
	ids := make([]uint64, 0, len(s.inflight))
	for _, id := range s.inflight {
		ids = append(ids, id)
	}
	if err := c.Renew(s.attemptCtx, ids); err != nil { // the claims last as long as the attempts
		return fmt.Errorf("renew the claims on deliveries in flight: %w", err)
	}
	s.renewed = time.Now()
	return nil
}

// senderOutcome is how an attempt ended.
type senderOutcome int

const (
	outcomeDelivered senderOutcome = iota
	outcomeRetry                   // transient: network error, timeout, 5xx, 429
	outcomePermanent               // other 4xx, 3xx, an unusable request
	outcomeStopped                 // cut short by Close: record nothing
	outcomeGone                    // the task or webhook is gone: the outbox dropped it
)

// request fills in d's request from the outbox. It answers
// outcomeDelivered when there is something to post. A request that
// cannot be built (the task does not read) is retried like a network
// error, and dead-lettered after MaxAttempts.
func (s *Sender) request(d *Delivery) (outcome senderOutcome, lastErr, retryAfter string) {
	ctx, cancel := context.WithTimeout(s.attemptCtx, senderRecordTimeout)
	defer cancel()
	err := s.cfg.Outbox.Request(ctx, d)
	switch {
	case err == nil:
		return outcomeDelivered, "", ""
	case errors.Is(err, ErrGone):
		return outcomeGone, "", ""
	case s.attemptCtx.Err() != nil:
		return outcomeStopped, "", ""
	}
	s.log.Error().Err(err).Str("task_id", d.TaskID).Str("config_id", d.ConfigID).Uint64("delivery_id", d.ID).
		Msg("read push delivery's task")
	return outcomeRetry, "task could not be read", ""
}

// attempt builds d's request from its task as it stands, makes one
// attempt and records its outcome in the outbox.
func (s *Sender) attempt(d Delivery) {
	outcome, lastErr, retryAfter := s.request(&d)
	start := time.Now()
	if outcome == outcomeDelivered {
		outcome, lastErr, retryAfter = s.post(d)
	}
	took := time.Since(start)
	switch outcome {
	case outcomeStopped:
		return // the delivery stays as it was; the next sender sends it
	case outcomeGone:
		s.log.Debug().Str("task_id", d.TaskID).Str("config_id", d.ConfigID).Uint64("delivery_id", d.ID).
			Msg("push delivery dropped: its task or webhook is gone")
		return
	}

	// The outcome is recorded even if Close cancels attempts meanwhile.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.attemptCtx), senderRecordTimeout)
	defer cancel()

	attempts := d.Attempts + 1
	var (
		err  error
		dead bool
	)
	switch {
	case outcome == outcomeDelivered:
		err = s.cfg.Outbox.Delivered(ctx, d.ID, d.Seq)
	case outcome == outcomeRetry && attempts < s.cfg.MaxAttempts:
		now := s.cfg.Now()
		delay := s.retryDelay(attempts, retryAfter, now)
		err = s.cfg.Outbox.Retry(ctx, d.ID, attempts, now.Add(delay), lastErr)
		if err == nil {
			s.log.Debug().Str("task_id", d.TaskID).Str("config_id", d.ConfigID).Uint64("delivery_id", d.ID).
				Str("webhook", webhookOrigin(d.URL)).Int("attempts", attempts).Str("last_error", lastErr).
				Dur("retry_in", delay).Msg("push delivery will be retried")
		}
	default:
		err = s.cfg.Outbox.Dead(ctx, d.ID, d.URL, attempts, lastErr)
		if err == nil {
			dead = true
			s.log.Warn().Str("task_id", d.TaskID).Str("config_id", d.ConfigID).Uint64("delivery_id", d.ID).
				Str("webhook", webhookOrigin(d.URL)).Int("attempts", attempts).Str("last_error", lastErr).
				Msg("push delivery dead-lettered")
		}
	}
	if err != nil {
		// The delivery stays due as it was and is attempted again.
		s.log.Error().Err(err).Str("task_id", d.TaskID).Str("config_id", d.ConfigID).Uint64("delivery_id", d.ID).
			Msg("record push delivery outcome")
	}
	if s.cfg.OnAttempt != nil {
		s.cfg.OnAttempt(outcome.label(), dead, took)
	}
}

// label is the outcome as OnAttempt is told it.
func (o senderOutcome) label() string {
	switch o {
	case outcomeDelivered:
		return AttemptDelivered
	case outcomeRetry:
		return AttemptTransient
	}
	return AttemptPermanent
}

// post POSTs d's body to its URL. lastErr is a short text for the outbox
// that never holds the URL, token, credentials or a body; retryAfter is
// the Retry-After header of a 429 or 503.
func (s *Sender) post(d Delivery) (outcome senderOutcome, lastErr, retryAfter string) {
	ctx, cancel := context.WithTimeout(s.attemptCtx, s.cfg.Timeout)
	defer cancel()

	body, ct, err := requestBody(&d)
	if err != nil {
		return outcomePermanent, "the task could not be encoded (not retried)", ""
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return outcomePermanent, "invalid request (not retried)", ""
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("User-Agent", "a2ad")
	req.Header.Set(DeliveryIDHeader, d.DeliveryID())
	if d.Token != "" {
		req.Header.Set("X-A2A-Notification-Token", d.Token)
	}
	if a := d.Auth; a != nil && len(a.Schemes) > 0 && a.Schemes[0] != "" && a.Credentials != "" {
		req.Header.Set("Authorization", a.Schemes[0]+" "+a.Credentials)
	}

	resp, err := s.client.Do(req)
	if err != nil {
		switch {
		case s.attemptCtx.Err() != nil:
			return outcomeStopped, "", ""
		case isTimeout(ctx, err):
			return outcomeRetry, "timed out", ""
		default:
			return outcomeRetry, "connection failed", ""
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, senderMaxResponse))
	_ = resp.Body.Close()

	code := resp.StatusCode
	switch {
	case code >= 200 && code <= 299:
		return outcomeDelivered, "", ""
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		return outcomeRetry, "HTTP " + strconv.Itoa(code), resp.Header.Get("Retry-After")
	case code >= 500 && code <= 599:
		return outcomeRetry, "HTTP " + strconv.Itoa(code), ""
	default:
		return outcomePermanent, "HTTP " + strconv.Itoa(code) + " (not retried)", ""
	}
}

// isTimeout reports whether err ended an attempt whose context is ctx
// because time ran out.
func isTimeout(ctx context.Context, err error) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// retryDelay is the wait after failed attempt number attempts (1-based):
// the full-jitter backoff, or Retry-After if that is longer, never more
// than MaxDelay.
func (s *Sender) retryDelay(attempts int, retryAfter string, now time.Time) time.Duration {
	ceil := doubled(s.cfg.BaseDelay, attempts-1, s.cfg.MaxDelay)
	r := s.cfg.Rand()
	if r < 0 || r >= 1 {
		r = 0
	}
	delay := time.Duration(r * float64(ceil))
	if ra, ok := parseRetryAfter(retryAfter, now); ok && ra > delay {
		delay = min(ra, s.cfg.MaxDelay)
	}
	return delay
}

// doubled is min(limit, d*2^n), without overflow.
func doubled(d time.Duration, n int, limit time.Duration) time.Duration {
	for ; n > 0 && d < limit; n-- {
		if d > limit/2 {
			return limit
		}
		d *= 2
	}
	return min(d, limit)
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP
// date (a date in the past means now).
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		const maxSeconds = 1 << 32 // far beyond any MaxDelay; keeps the product in range
		return time.Duration(min(n, maxSeconds)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// webhookOrigin is what the logs show of a webhook URL: its scheme and
// host, never its path, query or user info.
func webhookOrigin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "invalid"
	}
	return u.Scheme + "://" + u.Host
}
