package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/internal/crashpoint"
	"github.com/a2ad/a2ad/internal/syncdir"
)

// The write-ahead log. A group of writes is durable, and acknowledged,
// once its record is appended to the log's current segment and the
// segment fdatasynced: one sequential write and one sync, where a bbolt
// commit writes every page it dirties and syncs twice. The checkpoint
// (checkpoint.go) later writes the changes to the bbolt file in one synced
// transaction that also records the last log record it holds (meta
// "wal"); the segments it covers are then recycled. At open the records
// after that one are applied to the file before anything else reads it.
//
// The log is the directory <store file>.wal. A segment is named by the
// number (LSN) of its first record, %016x.wal; spare-N files are segments
// kept for reuse. Segments are filled with zeros (or hold a recycled
// segment's old records) before use, so that appending never grows the
// file and fdatasync writes no metadata. A record:
//
//	magic(4) length(4) lsn(8) crc32c(4) of lsn and ops, ops(length)
//
// and its ops, each
//
//	1 bucket(1) len(key) key len(value) value   put (lengths uvarint)
//	2 bucket(1) len(key) key                    delete
//	3 bucket(1) sequence(uvarint)               set the bucket's sequence
//
// where bucket indexes the layout's buckets (engine.go). Reading a segment stops at the
// first record that is not whole, not valid or not the next number: a
// torn last write, zeros, or a recycled segment's old records; or damage,
// which recovery (recover.go) tells from those.

const (
	walMagic     = 0xA2AD10C5
	walHeader    = 20
	walSpares    = 2
	walSuffix    = ".wal"
	sparePrefix  = "spare-"
	defaultSegMB = 16
)

var (
	keyWAL   = []byte("wal")
	crcTable = crc32.MakeTable(crc32.Castagnoli)
)

type walSeg struct {
	first uint64
	path  string
}

// Log appends records. The writer appends and rotates; the checkpoint
// trims, under mu.
type Log struct {
	dir      string
	segBytes int64
	noSync   bool

	mu     sync.Mutex
	segs   []walSeg // oldest first; the last is current
	spares []string
	nspare int

	f    *os.File // the current segment
	off  int64
	next uint64
	buf  []byte
}

// Dir is the log directory of the file at path.
func Dir(path string) string { return path + ".wal" }

// append writes one record of ops and syncs it; it returns the record's
// LSN.
func (w *Log) append(ops []byte) (uint64, error) {
	n := int64(walHeader + len(ops))
	if w.f == nil || (w.off > 0 && w.off+n > w.segBytes) {
		if err := w.rotate(); err != nil {
			return 0, err
		}
	}
	lsn := w.next
	b := w.buf[:0]
	b = binary.BigEndian.AppendUint32(b, walMagic)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ops)))
	b = binary.BigEndian.AppendUint64(b, lsn)
	crc := crc32.Update(crc32.Checksum(b[8:16], crcTable), crcTable, ops)
	b = binary.BigEndian.AppendUint32(b, crc)
	b = append(b, ops...)
	w.buf = b
	if _, err := w.f.WriteAt(b, w.off); err != nil {
		return 0, fmt.Errorf("write-ahead log: %w", err)
	}
	crashpoint.Hit("wal.write")
	if !w.noSync {
		if err := fdatasync(w.f); err != nil {
			return 0, fmt.Errorf("write-ahead log: sync: %w", err)
		}
	}
	crashpoint.Hit("wal.sync")
	w.off += n
	w.next++
	return lsn, nil
}

// probe tries the log's next write without a record: zeros where the
// next record's header goes (past the last record, so nothing reads
// them), synced; a new segment first if the current one could not hold
// a header. It runs on the writer, as append does.
func (w *Log) probe() error {
	if w.f == nil || w.off+walHeader > w.segBytes {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	var z [walHeader]byte
	if _, err := w.f.WriteAt(z[:], w.off); err != nil {
		return err
	}
	if w.noSync {
		return nil
	}
	return fdatasync(w.f)
}

// rotate makes a new segment current, from a spare if there is one.
func (w *Log) rotate() error {
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
	path := filepath.Join(w.dir, fmt.Sprintf("%016x%s", w.next, walSuffix))
	w.mu.Lock()
	var spare string
	if k := len(w.spares); k > 0 {
		spare, w.spares = w.spares[k-1], w.spares[:k-1]
	}
	w.mu.Unlock()
	var err error
	if spare != "" {
		err = os.Rename(spare, path)
	} else {
		err = zeroFile(path, w.segBytes)
	}
	if err != nil {
		return fmt.Errorf("write-ahead log: new segment: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0o600)
	if err == nil {
		err = syncdir.Sync(w.dir)
	}
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		return fmt.Errorf("write-ahead log: new segment: %w", err)
	}
	crashpoint.Hit("wal.rotate")
	w.mu.Lock()
	w.segs = append(w.segs, walSeg{first: w.next, path: path})
	w.mu.Unlock()
	w.f, w.off = f, 0
	return nil
}

// trim recycles the segments whose records all are at or below lsn; the
// current one stays.
func (w *Log) trim(lsn uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := 0
	for k+1 < len(w.segs) && w.segs[k+1].first <= lsn+1 {
		k++
	}
	for _, s := range w.segs[:k] {
		w.recycle(s.path, lsn)
	}
	w.segs = append(w.segs[:0], w.segs[k:]...)
}

// recycle keeps segment path, whose records are all at or below upTo, as
// a spare, or removes it. Called with mu. The spare's name keeps upTo:
// recovery reuses no spare whose old records might be taken for records
// after the file's (a file restored from a backup beside a newer log).
func (w *Log) recycle(path string, upTo uint64) {
	if len(w.spares) >= walSpares {
		_ = os.Remove(path)
		return
	}
	w.nspare++
	spare := filepath.Join(w.dir, fmt.Sprintf("%s%d-%016x", sparePrefix, w.nspare, upTo))
	if os.Rename(path, spare) != nil {
		_ = os.Remove(path)
		return
	}
	w.spares = append(w.spares, spare)
}

// close recycles every segment: the caller checkpointed all of them.
func (w *Log) close() error {
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
	w.mu.Lock()
	for _, s := range w.segs {
		w.recycle(s.path, w.next-1)
	}
	w.segs = nil
	w.mu.Unlock()
	return syncdir.Sync(w.dir)
}

func zeroFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	z := make([]byte, 1<<20)
	for off := int64(0); off < size && err == nil; off += int64(len(z)) {
		_, err = f.WriteAt(z[:min(int64(len(z)), size-off)], off)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}

func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// Applied reads the last log record the file of tx holds (0: none).
func (l *Layout) Applied(tx *bolt.Tx) uint64 {
	if v := tx.Bucket(l.Meta).Get(keyWAL); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (l *Layout) putApplied(tx *bolt.Tx, lsn uint64) error {
	return tx.Bucket(l.Meta).Put(keyWAL, binary.BigEndian.AppendUint64(nil, lsn))
}

// parseSpare reads a spare's name: its number, and the last record it may
// hold (ok false for a name that is no spare's; upTo is the largest number
// for a spare of a2ad before it was kept).
func parseSpare(name string) (n int, upTo uint64, ok bool) {
	num, hex, found := strings.Cut(strings.TrimPrefix(name, sparePrefix), "-")
	n, err := strconv.Atoi(num)
	if err != nil {
		return 0, 0, false
	}
	upTo = ^uint64(0)
	if found {
		if upTo, err = strconv.ParseUint(hex, 16, 64); err != nil {
			return 0, 0, false
		}
	}
	return n, upTo, true
}

// listWAL reads dir's segments (oldest first) and spares; a missing dir is
// an empty log.
func listWAL(dir string) (segs []walSeg, spares []string, nspare int, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, 0, nil
	}
	if err != nil {
		return nil, nil, 0, err
	}
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, walSuffix):
			first, perr := strconv.ParseUint(strings.TrimSuffix(name, walSuffix), 16, 64)
			if perr == nil {
				segs = append(segs, walSeg{first: first, path: filepath.Join(dir, name)})
			}
		case strings.HasPrefix(name, sparePrefix):
			spares = append(spares, filepath.Join(dir, name))
			if n, _, ok := parseSpare(name); ok && n > nspare {
				nspare = n
			}
		}
	}
	slices.SortFunc(segs, func(a, b walSeg) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return 0
	})
	return segs, spares, nspare, nil
}

// HeaderSize is the size of a record's header.
const HeaderSize = walHeader

// Segment is a log segment: its file, and the number of its first record.
type Segment struct {
	Path  string
	First uint64
}

// Position is where the log writes its next record: its segments, oldest
// first (the last is current), the offset in the current one and the
// record's number. For tests and diagnosis that damage or cut the log at
// a known record; it reads the writer's own state, so call it while no
// write runs.
type Position struct {
	Segments []Segment
	Offset   int64
	Next     uint64
}

// Position is where the log of db writes its next record.
func (db *DB) Position() Position {
	w := db.wal
	w.mu.Lock()
	defer w.mu.Unlock()
	p := Position{Offset: w.off, Next: w.next}
	for _, s := range w.segs {
		p.Segments = append(p.Segments, Segment{Path: s.path, First: s.first})
	}
	return p
}
