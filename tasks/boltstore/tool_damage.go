package boltstore

// A damaged store file: what bbolt does not check before it trusts the
// file (checkPages), and the panics and memory faults it raises when a
// page it trusted is garbage (engine.Guard).
//
// bbolt maps the file and reads its pages in place. A file cut short
// faults (SIGBUS) on the first page past its end, a freelist page that is
// no freelist panics at open, and a garbage leaf or branch panics, or
// faults, wherever a read reaches it. None of these is an error bbolt
// returns, and a fault is not even a panic unless the goroutine asked for
// one (debug.SetPanicOnFault). So Open and the tools check the meta pages
// before bbolt maps the file (checkPages, in opener); Check reads every
// page in use before bbolt's own page check does (scanPages); and the
// store's transactions, the start-up scans among them, run under
// engine.Guard.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
)

// The engine's errors for a damaged file and a log recovery cannot apply
// are the store's: they say what is wrong with the file or its log, and
// nothing of tasks.

// ErrDamaged is matched (errors.Is) by every *DamagedError.
var ErrDamaged = engine.ErrDamaged

// DamagedError says the store file cannot be read as a store: it was cut
// short, or a page bbolt relies on is garbage. Waiting or retrying does
// not help; the file must be restored from a backup.
type DamagedError = engine.DamagedError

// ErrLog is matched (errors.Is) by every *LogError, as is ErrDamaged.
var ErrLog = engine.ErrLog

// LogError says that the write-ahead log holds writes recovery cannot
// apply as they are. Nothing was applied: Repair applies the rest.
type LogError = engine.LogError

// BadOp is an op of a log record that bbolt refuses.
type BadOp = engine.BadOp

// LogDamage is a record that does not read back, and what the log holds
// after it, which recovery cannot apply without it.
type LogDamage = engine.LogDamage

// The parts of bbolt's file format checkPages reads (bbolt's
// internal/common: page.go and meta.go). Numbers are in the machine's byte
// order, as bbolt writes them.
const (
	pageHeaderSize = 16 // id(8) flags(2) count(2) overflow(4)
	metaSize       = 64 // magic(4) version(4) pageSize(4) flags(4) root(8) sequence(8) freelist(8) pgid(8) txid(8) checksum(8)
	metaMagic      = 0xED0CDAED
	metaVersion    = 2
	flagBranch     = 0x01
	flagLeaf       = 0x02
	flagFreelist   = 0x10
	noFreelist     = ^uint64(0)
)

// meta is what checkPages needs of a meta page.
type meta struct {
	pageSize                 uint64
	root, freelist, pgid, tx uint64
}

// readMeta decodes the meta page in b (a page header then the meta), or
// reports that it is not valid (bad magic, version or checksum), as
// bbolt's Meta.Validate does.
func readMeta(b []byte) (meta, bool) {
	if len(b) < pageHeaderSize+metaSize {
		return meta{}, false
	}
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	ne := binary.NativeEndian
	h := fnv.New64a()
	h.Write(m[:56])
	if ne.Uint32(m[0:]) != metaMagic || ne.Uint32(m[4:]) != metaVersion || ne.Uint64(m[56:]) != h.Sum64() {
		return meta{}, false
	}
	return meta{
		pageSize: uint64(ne.Uint32(m[8:])),
		root:     ne.Uint64(m[16:]),
		freelist: ne.Uint64(m[32:]),
		pgid:     ne.Uint64(m[40:]),
		tx:       ne.Uint64(m[48:]),
	}, true
}

// currentMeta reads the meta page bbolt would use: of the two, the valid
// one with the higher transaction id.
func currentMeta(f *os.File, size int64, damaged func(string, ...any) error) (meta, error) {
	// The page size is in the meta pages; bbolt looks for the second one
	// at every page size from 1 KiB to 16 MiB when the first is invalid.
	buf := make([]byte, pageHeaderSize+metaSize)
	read := func(off int64) bool {
		n, _ := f.ReadAt(buf, off)
		return n == len(buf)
	}
	var m0, m1 meta
	var ok0, ok1 bool
	if read(0) {
		m0, ok0 = readMeta(buf)
	}
	if ok0 && int64(m0.pageSize) < size && read(int64(m0.pageSize)) {
		m1, ok1 = readMeta(buf)
	}
	for i := 0; !ok0 && !ok1 && i <= 14; i++ {
		if pos := int64(1024) << i; pos < size-1024 && read(pos) {
			m1, ok1 = readMeta(buf)
		}
	}
	// bbolt uses the meta with the higher transaction id, or the other
	// one when that is invalid.
	var m meta
	switch {
	case !ok0 && !ok1:
		return m, damaged("it has no valid meta page (it is not a store file, or its first pages are damaged)")
	case ok0 && (!ok1 || m0.tx >= m1.tx):
		m = m0
	default:
		m = m1
	}
	return m, nil
}

// checkPages checks, before bbolt maps the file f of size bytes, what
// bbolt would trust without checking: that a meta page is valid, that the
// file holds every page the meta counts, and that the freelist and the
// root bucket are where the meta says. It reads about a page plus the
// freelist. A new, empty file passes. The error is a *DamagedError, or
// one from reading f.
func checkPages(f *os.File, size int64) error {
	if size == 0 {
		return nil // bbolt initialises it
	}
	damaged := func(format string, args ...any) error {
		return &DamagedError{Path: f.Name(), What: fmt.Sprintf(format, args...)}
	}
	m, err := currentMeta(f, size, damaged)
	if err != nil {
		return err
	}
	ps := m.pageSize
	if ps < 512 || ps > 1<<24 || ps&(ps-1) != 0 {
		return damaged("its meta page gives a page size of %d bytes", ps)
	}
	if m.pgid < 4 || m.pgid > uint64(1<<62)/ps {
		return damaged("its meta page counts %d pages", m.pgid)
	}
	if need := m.pgid * ps; uint64(size) < need {
		return damaged("the file is %d bytes, but its pages reach to byte %d (it was cut short)", size, need)
	}
	hdr := make([]byte, pageHeaderSize+8)
	page := func(id uint64) (flags uint16, count, overflow uint64, err error) {
		if _, err := f.ReadAt(hdr, int64(id*ps)); err != nil {
			return 0, 0, 0, fmt.Errorf("read page %d: %w", id, err)
		}
		ne := binary.NativeEndian
		return ne.Uint16(hdr[8:]), uint64(ne.Uint16(hdr[10:])), uint64(ne.Uint32(hdr[12:])), nil
	}
	if m.root < 2 || m.root >= m.pgid {
		return damaged("its root bucket is page %d, outside pages 2 to %d", m.root, m.pgid-1)
	}
	switch flags, _, _, err := page(m.root); {
	case err != nil:
		return err
	case flags != flagBranch && flags != flagLeaf:
		return damaged("its root bucket page %d is no branch or leaf page (flags %#x)", m.root, flags)
	}
	if m.freelist == noFreelist {
		return nil // bbolt rebuilds it by walking the tree
	}
	if m.freelist < 2 || m.freelist >= m.pgid {
		return damaged("its freelist is page %d, outside pages 2 to %d", m.freelist, m.pgid-1)
	}
	flags, count, overflow, err := page(m.freelist)
	if err != nil {
		return err
	}
	if flags != flagFreelist {
		return damaged("its freelist page %d is no freelist page (flags %#x)", m.freelist, flags)
	}
	if m.freelist+overflow >= m.pgid {
		return damaged("its freelist (page %d and %d more) reaches past its last page %d", m.freelist, overflow, m.pgid-1)
	}
	// The freelist's ids follow the header; a count of 0xFFFF means the
	// real count is the first id.
	start := uint64(pageHeaderSize)
	if count == 0xFFFF {
		count = binary.NativeEndian.Uint64(hdr[pageHeaderSize:])
		start += 8
	}
	if count > ((overflow+1)*ps-start)/8 {
		return damaged("its freelist page %d counts %d free pages, more than it holds", m.freelist, count)
	}
	ids := make([]byte, count*8)
	if _, err := f.ReadAt(ids, int64(m.freelist*ps+start)); err != nil {
		return fmt.Errorf("read the freelist: %w", err)
	}
	for i := 0; i < len(ids); i += 8 {
		if id := binary.NativeEndian.Uint64(ids[i:]); id < 2 || id >= m.pgid {
			return damaged("its freelist page %d lists page %d, outside pages 2 to %d", m.freelist, id, m.pgid-1)
		}
	}
	return nil
}

// openDB opens the bbolt file at path through an opener (the lock, a
// re-open if the file was replaced meanwhile, and checkPages), under
// guard. A lock not taken in time is berrors.ErrTimeout.
func openDB(path string, mode os.FileMode, opts *bolt.Options) (*bolt.DB, error) {
	op := &opener{exclusive: !opts.ReadOnly, timeout: opts.Timeout}
	opts.OpenFile = op.open
	var db *bolt.DB
	err := engine.Guard(path, func() (err error) {
		db, err = bolt.Open(path, mode, opts)
		return err
	})
	if err != nil && db == nil && op.file != nil {
		// bbolt closes the file on an error it returns, not on a panic.
		// (Closing an *os.File twice only returns os.ErrClosed.)
		op.file.Close()
	}
	return db, err
}

// scanPages reads every branch and leaf page in use of the file of tx at
// path, with file reads rather than through bbolt's map, and checks what
// bbolt's own page check (tx.Check) reads without checking: that each
// element, its key and its value lie inside the page, and that each page
// id in it is one of the file's. tx.Check runs on a goroutine of its own,
// where it recovers panics but where a fault on the map (an element
// pointing past it) would kill the process. The error is a
// *DamagedError, or one from reading the file. The file's freelist must
// be loaded (bolt.Options.PreLoadFreelist), so that freed pages, which
// keep what they held, are told from pages in use.
func scanPages(tx *bolt.Tx, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	ps := int64(tx.DB().Info().PageSize)
	pgid := tx.Size() / ps
	var buf []byte
	for id := int64(2); id < pgid; {
		pi, err := tx.Page(int(id))
		if err != nil {
			return err
		}
		n := int64(1)
		switch pi.Type {
		case "freelist":
			n += int64(pi.OverflowCount)
		case "branch", "leaf":
			n += int64(pi.OverflowCount)
			if id+n > pgid {
				return &DamagedError{Path: path, What: fmt.Sprintf("page %d and its %d overflow pages reach past its last page %d", id, n-1, pgid-1)}
			}
			buf = slices.Grow(buf[:0], int(n*ps))[:n*ps]
			if _, err := f.ReadAt(buf, id*ps); err != nil {
				return fmt.Errorf("read page %d: %w", id, err)
			}
			if what := checkElements(buf, uint64(pgid)); what != "" {
				return &DamagedError{Path: path, What: fmt.Sprintf("page %d: %s", id, what)}
			}
		}
		id += n
	}
	return nil
}

// checkElements checks the branch or leaf page p (its header and
// elements, with an inline bucket's page in a leaf's value checked in
// turn) of a file of pgid pages, and says what is wrong, or "".
func checkElements(p []byte, pgid uint64) string {
	ne := binary.NativeEndian
	flags, count := ne.Uint16(p[8:]), uint64(ne.Uint16(p[10:]))
	if flags != flagBranch && flags != flagLeaf {
		return fmt.Sprintf("no branch or leaf page (flags %#x)", flags)
	}
	size := uint64(len(p))
	if pageHeaderSize+count*16 > size {
		return fmt.Sprintf("its %d elements do not fit in it", count)
	}
	for i := range count {
		e := pageHeaderSize + i*16
		if flags == flagBranch {
			pos, ksize, child := uint64(ne.Uint32(p[e:])), uint64(ne.Uint32(p[e+4:])), ne.Uint64(p[e+8:])
			if e+pos+ksize > size {
				return fmt.Sprintf("element %d's key lies outside the page", i)
			}
			if child < 2 || child >= pgid {
				return fmt.Sprintf("element %d points to page %d, outside pages 2 to %d", i, child, pgid-1)
			}
			continue
		}
		eflags := ne.Uint32(p[e:])
		pos, ksize, vsize := uint64(ne.Uint32(p[e+4:])), uint64(ne.Uint32(p[e+8:])), uint64(ne.Uint32(p[e+12:]))
		if e+pos+ksize+vsize > size {
			return fmt.Sprintf("element %d's key or value lies outside the page", i)
		}
		if eflags&0x01 == 0 {
			continue // a value, not a bucket
		}
		v := p[e+pos+ksize : e+pos+ksize+vsize]
		if len(v) < 16 {
			return fmt.Sprintf("element %d is a bucket of %d bytes, shorter than its header", i, len(v))
		}
		switch root := ne.Uint64(v); {
		case root == 0: // inline: its page follows the bucket header
			if len(v) < 16+pageHeaderSize {
				return fmt.Sprintf("element %d is an inline bucket without its page", i)
			}
			if what := checkElements(v[16:], pgid); what != "" {
				return fmt.Sprintf("element %d's inline bucket: %s", i, what)
			}
		case root < 2 || root >= pgid:
			return fmt.Sprintf("element %d is a bucket whose root is page %d, outside pages 2 to %d", i, root, pgid-1)
		}
	}
	return ""
}

// openError is err from opening the file at path, which a *DamagedError
// names already.
func openError(path string, err error) error {
	if errors.Is(err, ErrDamaged) {
		return err
	}
	return fmt.Errorf("open task store %s: %w", path, err)
}
