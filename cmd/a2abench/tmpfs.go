package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// tmpfsRoot holds a2ad-tmpfs's store: memory, where an fsync costs
// nothing, so a2ad-tmpfs shows the most the disk can cost a2ad.
var tmpfsRoot = "/dev/shm"

// tmpfsStore makes a directory under tmpfsRoot and returns the path of
// the store file name in it (the store puts its write-ahead log,
// <store>.wal, beside the file) and a function that removes the
// directory.
func tmpfsStore(name string) (store string, remove func() error, err error) {
	dir, err := os.MkdirTemp(tmpfsRoot, "a2abench-")
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(dir, name+".db"), func() error { return os.RemoveAll(dir) }, nil
}

// skipUnavailable is servers without a2ad-tmpfs, said on w in one line,
// when tmpfsRoot is not writable; servers as they are otherwise.
func skipUnavailable(servers []string, w io.Writer) []string {
	if !contains(servers, "a2ad-tmpfs") {
		return servers
	}
	_, remove, err := tmpfsStore("a2ad-tmpfs")
	if err == nil {
		if err = remove(); err == nil {
			return servers
		}
	}
	fmt.Fprintf(w, "a2abench: skipping a2ad-tmpfs: %s is not writable: %v\n", tmpfsRoot, err)
	return slices.DeleteFunc(slices.Clone(servers), func(s string) bool { return s == "a2ad-tmpfs" })
}
