package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
)

// Options tune the store. The zero value is usable.
type Options struct {
	// MaxConns caps the connections of the pool; 0 is pgxpool's default
	// (4, or the number of CPUs if more).
	MaxConns int32
	// ConnectTimeout bounds Open's first connection; default 10s.
	ConnectTimeout time.Duration
	// WriteTimeout bounds a write once it has begun; default 30s. A
	// write outlives its caller's context, so that the caller learns
	// whether it committed.
	WriteTimeout time.Duration
	// ClaimTTL is how long a push delivery this store's Due handed out
	// stays its own: no other store sends it meanwhile. Each Due that
	// hands it out again, and each Renew, renews it. Default 15s.
	ClaimTTL time.Duration
	// OnCommit, when set, is told of each write transaction committed
	// and how long it took.
	OnCommit func(writes int, d time.Duration)
	// OnTransition, when set, is told of each committed write that
	// changed a task's state; from is "" for a new task. It must be
	// quick.
	OnTransition func(from, to a2a.TaskState)
	// Exclusive makes Open take the database (its schema) for this store
	// alone, for as long as it is open, and fail with ErrInUse when
	// another store holds it, shared or alone. a2ad store migrate sets
	// it: a server meanwhile would settle tasks half copied.
	Exclusive bool
	// Shared makes Open take the database together with other Shared
	// stores, for as long as it is open, and fail with ErrMigrating while
	// an Exclusive one holds it. a2ad serve sets it: replicas share a
	// database (with leases), but not with a migration into it.
	Shared bool
	// ReadOnly opens the store for the store tools: its schema must be
	// this a2ad's version already (ErrNoStore, *SchemaTooNewError or
	// *SchemaTooOldError otherwise), nothing is created or migrated, and
	// every transaction is read-only.
	ReadOnly bool
}

// ErrInUse is Open's error, with Options.Exclusive, for a database that
// an a2ad (a server, or another store migrate) holds.
var ErrInUse = errors.New("the database is in use by another a2ad (a server or a store migrate): stop it first")

// ErrMigrating is Open's error, with Options.Shared, for a database that
// a2ad store migrate is copying into.
var ErrMigrating = errors.New("a2ad store migrate is copying into the database: start a2ad once it has finished")

// useLock is the first key of the session advisory lock Exclusive takes
// (the second is the schema's): "a2au".
const useLock = 0x61326175

// Store is a tasks.Store in a PostgreSQL database.
type Store struct {
	pool     *pgxpool.Pool
	target   string
	opts     Options
	instance []byte           // this store's name in the outbox's claims
	clock    func() time.Time // the host's clock: time.Now, unless a test sets another
	held     *pgxpool.Conn    // with Options.Exclusive or Shared: the session holding the use lock

	closed    atomic.Bool
	oldest    atomic.Int32 // the oldest schema of a replica holding a lease: write as it did (layout.go)
	closeOnce sync.Once
	onOutbox  atomic.Pointer[func()]

	channel string  // the NOTIFY channel of the store's schema
	tag     string  // this store's name in its notices
	notices notices // commits to tell the other stores of

	ctx    context.Context // the life of the store's goroutines: Open to Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Store is a whole tasks.Backend.
var _ tasks.Backend = (*Store)(nil)

// Open connects to the database at dsn (a postgres:// URL), creates or
// migrates its schema, and returns the store. A database that cannot be
// reached, and a schema newer than this a2ad's (*SchemaTooNewError), are
// errors that name the server's host and database, never its password.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 30 * time.Second
	}
	if opts.ClaimTTL <= 0 {
		opts.ClaimTTL = 15 * time.Second
	}
	target := Target(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open task store %s: %w", target, scrub(err, dsn))
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.ReadOnly {
		// The server itself refuses a write, whatever code asks for one.
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	} else {
		cfg.AfterConnect = newShards().afterConnect
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open task store %s: %w", target, scrub(err, dsn))
	}
	cctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	if err := pool.Ping(cctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open task store %s: cannot reach the server: %w", target, scrub(err, dsn))
	}
	prepare := migrate
	if opts.ReadOnly {
		prepare = requireCurrent
	}
	if err := prepare(cctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open task store %s: %w", target, scrub(err, dsn))
	}
	var schema string
	if err := pool.QueryRow(cctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open task store %s: read the schema: %w", target, scrub(err, dsn))
	}
	s := &Store{pool: pool, target: target, opts: opts, instance: make([]byte, 16), clock: time.Now, channel: channelName(schema)}
	_, _ = rand.Read(s.instance)
	s.tag = hex.EncodeToString(s.instance[:8])
	s.setOldest(nil)
	s.notices = notices{pending: make(map[string][2]uint64), wake: make(chan struct{}, 1)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.notify(s.ctx) }()
	if !opts.ReadOnly {
		if err := s.readOldest(cctx); err != nil {
			s.cancel()
			s.wg.Wait()
			pool.Close()
			return nil, fmt.Errorf("open task store %s: read the leases: %w", target, scrub(err, dsn))
		}
	}
	if opts.Exclusive || opts.Shared {
		if err := s.takeUse(cctx, opts.Exclusive); err != nil {
			s.cancel()
			s.wg.Wait()
			pool.Close()
			return nil, fmt.Errorf("open task store %s: %w", target, scrub(err, dsn))
		}
	}
	return s, nil
}

// takeUse takes the session advisory lock of the store's schema, alone
// or shared, on a connection held until Close: ErrInUse (alone) or
// ErrMigrating (shared) if another session holds it the other way.
func (s *Store) takeUse(ctx context.Context, alone bool) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	var ok bool
	q, refused := `SELECT pg_try_advisory_lock_shared($1, hashtext(current_schema()))`, ErrMigrating
	if alone {
		q, refused = `SELECT pg_try_advisory_lock($1, hashtext(current_schema()))`, ErrInUse
	}
	if err := conn.QueryRow(ctx, q, int32(useLock)).Scan(&ok); err != nil {
		conn.Release()
		return err
	}
	if !ok {
		conn.Release()
		return refused
	}
	s.held = conn
	return nil
}

// Target is dsn as logs and errors may show it: postgres://user@host:port/
// database, without its password or any parameter.
func Target(dsn string) string {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		u, uerr := url.Parse(dsn)
		if uerr != nil || u.Host == "" {
			return "postgres://(unparsable URL)"
		}
		return "postgres://" + u.Host + "/"
	}
	host := fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)
	if strings.Contains(cfg.Host, ":") {
		host = fmt.Sprintf("[%s]:%d", cfg.Host, cfg.Port)
	}
	return (&url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: host, Path: "/" + cfg.Database}).String()
}

// scrub returns err with dsn's password (in its user information or a
// parameter) replaced, in case a driver's message quotes it.
func scrub(err error, dsn string) error {
	msg := err.Error()
	var secrets []string
	if u, uerr := url.Parse(dsn); uerr == nil {
		if p, ok := u.User.Password(); ok && p != "" {
			secrets = append(secrets, p, url.QueryEscape(p), url.PathEscape(p))
		}
		for _, k := range []string{"password", "sslpassword"} {
			if p := u.Query().Get(k); p != "" {
				secrets = append(secrets, p, url.QueryEscape(p))
			}
		}
	}
	clean := msg
	for _, sec := range secrets {
		clean = strings.ReplaceAll(clean, sec, "xxxxx")
	}
	if clean == msg {
		return err
	}
	return errors.New(clean)
}

// Target is the database the store is in, as Target(dsn) shows it.
func (s *Store) Target() string { return s.target }

// Close closes the pool's connections, once the queries running end. The
// store then refuses writes with tasks.ErrClosed; a second Close returns
// nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.cancel() // the notices and the listener
		s.wg.Wait()
		if !s.opts.ReadOnly {
			// Hand back the deliveries this store holds, for the next one.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, _ = s.pool.Exec(ctx, `UPDATE outbox SET claimed_by = NULL WHERE claimed_by = $1`, s.instance)
			cancel()
		}
		if s.held != nil {
			// Unlock before closing the session: the server drops a closed
			// session's locks only as its backend exits, after Close has
			// returned, and the next a2ad would find the lock still held.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, _ = s.held.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
			cancel()
			_ = s.held.Conn().Close(context.Background())
			s.held.Release()
		}
		s.pool.Close()
	})
	return nil
}

// Closed reports whether Close has begun.
func (s *Store) Closed() bool { return s.closed.Load() }

// SetOutboxHook sets fn to be called after each commit that queued push
// deliveries (the sender's Wake). fn must not block.
func (s *Store) SetOutboxHook(fn func()) { s.onOutbox.Store(&fn) }

func (s *Store) queued(n int) {
	if n > 0 {
		if fn := s.onOutbox.Load(); fn != nil {
			(*fn)()
		}
	}
}

// transition tells OnTransition of a committed change of state.
func (s *Store) transition(from, to a2a.TaskState) {
	if s.opts.OnTransition != nil && from != to {
		s.opts.OnTransition(from, to)
	}
}

// usable returns the error of a call the store must refuse: ctx's, or
// ErrClosed.
func (s *Store) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return tasks.ErrClosed
	}
	return nil
}

// failed is err as the store returns it: ErrClosed once the store is
// closed (the pool's own error then says little), ErrStoreUnavailable
// when the server cannot be reached.
func (s *Store) failed(err error) error {
	if err != nil && s.closed.Load() && !errors.Is(err, tasks.ErrClosed) {
		return fmt.Errorf("%w: %v", tasks.ErrClosed, err)
	}
	return asUnavailable(err)
}

// write runs fn in a transaction and commits it. It goes on when ctx
// ends (within WriteTimeout), so that the caller learns whether it
// committed; it runs fn again when the server found the transaction in a
// deadlock or a serialization failure, so fn may run more than once.
func (s *Store) write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.WriteTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		start := time.Now()
		err := pgx.BeginFunc(wctx, s.pool, fn)
		if err == nil && s.opts.OnCommit != nil {
			s.opts.OnCommit(1, time.Since(start))
		}
		if retryable(err) && attempt < 10 {
			continue
		}
		return s.failed(err)
	}
}

// retryable reports whether err is the server's refusal of a
// transaction that may pass when run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// read runs fn in a read-only transaction that sees one snapshot.
func (s *Store) read(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	return s.failed(pgx.BeginTxFunc(ctx, s.pool, opts, fn))
}
