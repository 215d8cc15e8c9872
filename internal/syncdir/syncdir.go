// Package syncdir makes the entries of a directory durable: after a file
// is renamed or linked into a directory, the new name survives a crash
// only once the directory itself is synced.
package syncdir

import "os"

// Sync syncs the directory dir, making a rename or link in it durable.
func Sync(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
