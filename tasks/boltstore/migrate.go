package boltstore

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/tasks/record"
)

// schemaVersion is the schema this package writes, and the version of its
// record format (package record: record v1 is schema 5, record v2 schema
// 6). Open migrates a store of an older one, one step of migrations at a
// time.
const schemaVersion = "6"

// migration upgrades a store from one schema version to the next: tx in
// one transaction, which also writes the new version; or run, in several,
// after marking the store (meta "migrating" = to, "schema" = to) so that
// an older a2ad refuses the half-migrated file and the next Open resumes
// the step, which must therefore be safe to run again; the mark goes when
// run returns.
type migration struct {
	from, to string
	tx       func(tx *bolt.Tx) error
	run      func(db *bolt.DB) error
}

// migrations, in order: each step's from is the previous step's to.
var migrations = []migration{
	{from: "2", to: "3", tx: func(tx *bolt.Tx) error { return migrateListing(wrap(tx)) }},
	{from: "3", to: "4", tx: func(tx *bolt.Tx) error { return migrateOutbox(wrap(tx)) }},
	{from: "4", to: "5", run: migrateLayout},
	// Record v2 reads v1 as it was: nothing is rewritten. The new version
	// is what keeps an older a2ad, which would answer v2's messages
	// without their ids, from opening the store.
	{from: "5", to: "6", tx: func(*bolt.Tx) error { return nil }},
}

// migrate brings the store to schemaVersion, resuming a step an earlier
// Open left half done.
func migrate(db *bolt.DB) error {
	var version, resume string
	if err := db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		version, resume = string(meta.Get(keySchema)), string(meta.Get(keyMigrating))
		return nil
	}); err != nil {
		return err
	}
	for version != schemaVersion || resume != "" {
		m, ok := nextMigration(version, resume)
		if !ok {
			if resume != "" {
				return fmt.Errorf("store schema migration to %q did not finish, and this a2ad cannot finish it (it writes schema %q)", resume, schemaVersion)
			}
			return fmt.Errorf("store schema version %q is not supported (want %q)", version, schemaVersion)
		}
		if err := m.apply(db, resume != ""); err != nil {
			return fmt.Errorf("migrate store schema %s to %s: %w", m.from, m.to, err)
		}
		version, resume = m.to, ""
	}
	return nil
}

// nextMigration is the step to run: the one being resumed (to = resume),
// or the one from version.
func nextMigration(version, resume string) (migration, bool) {
	for _, m := range migrations {
		if (resume != "" && m.to == resume && m.run != nil) || (resume == "" && m.from == version) {
			return m, true
		}
	}
	return migration{}, false
}

// apply runs m; resuming, the mark is set already.
func (m migration) apply(db *bolt.DB, resuming bool) error {
	if m.run == nil {
		return db.Update(func(tx *bolt.Tx) error {
			if err := m.tx(tx); err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(keySchema, []byte(m.to))
		})
	}
	if !resuming {
		if err := db.Update(func(tx *bolt.Tx) error {
			meta := tx.Bucket(bucketMeta)
			if err := meta.Put(keyMigrating, []byte(m.to)); err != nil {
				return err
			}
			return meta.Put(keySchema, []byte(m.to))
		}); err != nil {
			return err
		}
	}
	if err := m.run(db); err != nil {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete(keyMigrating) })
}

// migrateBatch is how many tasks one transaction of migrateLayout
// converts: a store of a million tasks is not rewritten in one
// transaction (which would hold every page it writes in memory). A
// variable for tests.
var migrateBatch = 1000

// bucketEventsV3 held the events of schemas 2 to 4, keyed taskID 0x00
// seq(8); schema 5 keeps them in body.
var bucketEventsV3 = []byte("events")

// migrateLayout moves every task of a schema 4 store into the layout of
// layout.go: its head stays in tasks, its history, artifacts, input and
// message ids, and its events, go to body. Tasks already converted (by an
// earlier, interrupted run) are skipped. Last, the events bucket goes,
// with any events of no task left in it, and the stored bytes per owner
// are counted again at open (usage.go): a task takes other bytes in this
// layout.
func migrateLayout(db *bolt.DB) error {
	if err := convertTasks(db, -1); err != nil {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketEventsV3) != nil {
			if err := tx.DeleteBucket(bucketEventsV3); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Delete(keyUsage)
	})
}

// convertTasks converts up to limit tasks (all when limit < 0).
func convertTasks(db *bolt.DB, limit int) error {
	var after []byte // the last key of the previous batch
	for {
		var done bool
		err := db.Update(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketTasks).Cursor()
			k, v := c.First()
			if after != nil {
				k, v = c.Seek(after)
				if k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			type kv struct{ k, v []byte }
			var batch []kv
			for ; k != nil && len(batch) < migrateBatch && limit != 0; k, v = c.Next() {
				after = append(after[:0], k...)
				if len(v) > 8 && v[8] == headFormat {
					continue
				}
				batch = append(batch, kv{append([]byte(nil), k...), append([]byte(nil), v...)})
				limit--
			}
			done = k == nil || limit == 0
			for _, t := range batch {
				if err := convertTask(tx, string(t.k), t.v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || done {
			return err
		}
	}
}

// convertTask rewrites one record of schema 4 (or before) in the new
// layout, and moves its events.
func convertTask(tx *bolt.Tx, id string, v []byte) error {
	r, err := decodeWhole(id, v)
	if err != nil {
		return err
	}
	e, err := encodeNew(r, nil, record.IDs{}) // record v1, which schema 5 is
	if err != nil {
		return fmt.Errorf("task %s: %w", id, err)
	}
	if eb := tx.Bucket(bucketEventsV3); eb != nil {
		// Its keys: the id, 0, and 8 bytes (an id with a 0 in it is a
		// prefix of others' keys: those are not its).
		prefix := append([]byte(id), 0)
		var moved [][]byte
		c := eb.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) == len(prefix)+8 {
				e.body.put(id, kindEvent, k[len(prefix):], v)
				moved = append(moved, append([]byte(nil), k...))
			}
		}
		for _, k := range moved {
			if err := eb.Delete(k); err != nil {
				return err
			}
		}
	}
	if err := tx.Bucket(bucketTasks).Put([]byte(id), e.value); err != nil {
		return err
	}
	return e.body.apply(wrap(tx))
}
