package boltstore

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// MigrateTo runs the schema migrations of the store file at path up to
// version, as Open would, but stops the migration to version once it has
// converted stopAfter tasks (when stopAfter >= 0), as a crash would.
func MigrateTo(path, version string, stopAfter int) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	var v string
	if err := db.View(func(tx *bolt.Tx) error {
		v = string(tx.Bucket(bucketMeta).Get(keySchema))
		return nil
	}); err != nil {
		return err
	}
	for v != version {
		m, ok := nextMigration(v, "")
		if !ok {
			return fmt.Errorf("no migration from %q", v)
		}
		if m.to == version && stopAfter >= 0 && m.run != nil {
			m.run = func(db *bolt.DB) error {
				if err := convertTasks(db, stopAfter); err != nil {
					return err
				}
				return errCrash
			}
		}
		if err := db.Update(createBuckets); err != nil {
			return err
		}
		if err := m.apply(db, false); err != nil {
			if err == errCrash { //nolint:errorlint // our own sentinel, unwrapped
				return nil
			}
			return err
		}
		v = m.to
	}
	return nil
}

var errCrash = fmt.Errorf("crash")

// SetMigrateBatch sets how many tasks one transaction of the layout
// migration converts, until the test ends.
func SetMigrateBatch(tb interface{ Cleanup(func()) }, n int) {
	old := migrateBatch
	migrateBatch = n
	tb.Cleanup(func() { migrateBatch = old })
}

// createBuckets creates every bucket of the layout, as Open does
// (engine.Prepare).
func createBuckets(tx *bolt.Tx) error {
	for _, b := range layout.Buckets {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	return nil
}
