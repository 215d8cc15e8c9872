// Package stores is the opener table: the kinds of task store a2ad has,
// found by the scheme of the store URL (--store), and how each is opened
// by the server and by the store tools. Every store is a tasks.Backend;
// what else one can do is an optional interface that whoever needs it
// asserts on what Open returns.
//
// A third store is one package implementing tasks.Backend, one var _
// check beside it, one row in kinds, and the conformance suite
// (tasks/storetest) run over it.
package stores

import (
	"context"
	"strings"
	"time"

	"github.com/a2ad/a2ad/a2a"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/pgstore"
)

// Options are what the server sets of whichever store it opens; a kind
// takes the ones it has.
type Options struct {
	// LockTimeout bounds the wait for a store file another process
	// holds.
	LockTimeout time.Duration
	// MaxConns caps the connections to a database.
	MaxConns int
	// LeaseTTL is the replicas' lease, which bounds the claims on the
	// push deliveries of a shared store.
	LeaseTTL time.Duration
	// OnCommit and OnTransition are told of commits and state changes.
	OnCommit     func(writes int, d time.Duration)
	OnTransition func(from, to a2a.TaskState)
	// OnCheckpointError is told of a failed checkpoint of a store file.
	OnCheckpointError func(error)
	// WALSegmentBytes sizes the write-ahead log segments of a store file
	// (0: the default).
	WALSegmentBytes int64
}

// Kind is one row of the opener table: a kind of store and how it opens.
type Kind struct {
	// Noun names the kind in messages: "a bbolt store file".
	Noun string
	// File marks the kind a store value without a known scheme is: a
	// path to a store file, which the offline tools (backup, compact,
	// check, repair, migrate's source) work on while no server holds it.
	File bool
	// Instead is, for each store tool this kind has not, what to do
	// instead.
	Instead map[string]string

	// schemes are the prefixes (a URL's scheme) of the store values that
	// are this kind's; the rest of the value is its target, or the value
	// whole with keepScheme (a URL).
	schemes    []string
	keepScheme bool
	name       func(target string) string
	open       func(ctx context.Context, target string, o Options) (tasks.Backend, error)
	// openTool opens target for a store tool: read-only (a check) or
	// else held exclusively (a migration's target). Nil for a file kind.
	openTool func(ctx context.Context, target string, readOnly bool) (tasks.Backend, error)
}

// kinds is the opener table.
var kinds = []*Kind{
	{
		Noun: "a bbolt store file", File: true, schemes: []string{"bolt:"},
		name: func(target string) string { return target },
		open: func(_ context.Context, path string, o Options) (tasks.Backend, error) {
			return backend(boltstore.Open(path, boltstore.Options{
				LockTimeout: o.LockTimeout, OnCommit: o.OnCommit, OnTransition: o.OnTransition,
				OnCheckpointError: o.OnCheckpointError, WALSegmentBytes: o.WALSegmentBytes,
			}))
		},
	},
	{
		Noun: "a PostgreSQL database", schemes: []string{"postgres://", "postgresql://"}, keepScheme: true,
		name: pgstore.Target,
		open: func(ctx context.Context, dsn string, o Options) (tasks.Backend, error) {
			return backend(pgstore.Open(ctx, dsn, pgstore.Options{
				MaxConns: int32(o.MaxConns), OnCommit: o.OnCommit, OnTransition: o.OnTransition,
				// Replicas share the database, but not with a migration
				// into it.
				Shared: true,
				// A push delivery a dead replica was sending is taken over
				// as its calls are, once its lease would have lapsed.
				ClaimTTL: o.LeaseTTL,
			}))
		},
		openTool: func(ctx context.Context, dsn string, readOnly bool) (tasks.Backend, error) {
			// Exclusive: a server serving the database during a migration
			// would recover tasks half copied; one started meanwhile is
			// refused.
			return backend(pgstore.Open(ctx, dsn, pgstore.Options{ReadOnly: readOnly, Exclusive: !readOnly, MaxConns: 2}))
		},
		Instead: map[string]string{
			"store backup":  "back it up with pg_dump, or your database's usual way",
			"store compact": "PostgreSQL reclaims the space of deleted rows itself (autovacuum)",
			"store repair":  "a database has no write-ahead log of a2ad's",
		},
	},
}

// Of returns the kind of store the value store names, and its target:
// the row whose scheme it has, else the file kind with store as the
// path.
func Of(store string) (*Kind, string) {
	var file *Kind
	for _, k := range kinds {
		for _, sc := range k.schemes {
			if rest, ok := strings.CutPrefix(store, sc); ok {
				if k.keepScheme {
					return k, store
				}
				return k, rest
			}
		}
		if k.File {
			file = k
		}
	}
	return file, store
}

// Name is store as logs, errors and the operator's view show it: a
// file's path as given, a database's URL without its password or
// parameters.
func Name(store string) string {
	k, target := Of(store)
	if k.File {
		return store
	}
	return k.name(target)
}

// Open opens the store of kind k at target for the server.
func (k *Kind) Open(ctx context.Context, target string, o Options) (tasks.Backend, error) {
	return k.open(ctx, target, o)
}

// OpenTool opens the store of kind k at target for a store tool:
// read-only, or else held exclusively (no server may serve it
// meanwhile). It reports false for a file kind, whose tools work on the
// file offline.
func (k *Kind) OpenTool(ctx context.Context, target string, readOnly bool) (tasks.Backend, bool, error) {
	if k.openTool == nil {
		return nil, false, nil
	}
	s, err := k.openTool(ctx, target, readOnly)
	return s, true, err
}

// backend is s as a tasks.Backend, and nil (not a nil *S in a non-nil
// interface) when err is not.
func backend[S tasks.Backend](s S, err error) (tasks.Backend, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}
