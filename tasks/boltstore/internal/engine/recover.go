package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/internal/crashpoint"
	"github.com/a2ad/a2ad/internal/syncdir"
)

// Recovery: at open, the log records the file does not hold yet are
// applied to it in one synced transaction. Only what a crash leaves is
// dropped without a word: a last record torn in its write (never synced,
// so never acknowledged), followed by nothing that continues the log.
// Anything else that keeps a record from being applied is a *LogError,
// and nothing is applied:
//
//   - damage: a record that does not read back (its header or checksum)
//     with records of the log after it, in its segment or in later ones;
//     or records missing between two segments;
//   - a record holding an op bbolt refuses (a key over its limit), which
//     an a2ad before the write-time checks (limit.go) could log;
//   - a missing log directory, where the file says a server had the log
//     open and did not close it (meta "walopen").
//
// The store's Repair applies such a log as far as it can (Mode), saying
// what it leaves out.

// Mode is what Recover may leave out (the store's Repair), and how the
// log it returns writes.
type Mode struct {
	SkipBad    bool // apply every op of a record but those bbolt refuses
	AcceptLoss bool // apply up to damage; keep the rest aside
	Server     bool // a server opens the log: mark it open in the file
	// SegmentBytes is the size of a new segment (0: 16 MiB); NoSync
	// skips fdatasync (benchmarks only).
	SegmentBytes int64
	NoSync       bool
}

// Recovery is what Recover left out, under its Mode.
type Recovery struct {
	Left  LogError
	Aside string // where the segments from the damaged one on went
}

// walRec is a record read from a segment.
type walRec struct {
	off int
	lsn uint64
	ops []byte
}

// recordAt decodes the record at off in data: ok if it is whole and its
// checksum matches.
func recordAt(data []byte, off int) (lsn uint64, ops []byte, size int, ok bool) {
	if off < 0 || off+walHeader > len(data) {
		return 0, nil, 0, false
	}
	h := data[off:]
	n := int(binary.BigEndian.Uint32(h[4:8]))
	if binary.BigEndian.Uint32(h[:4]) != walMagic || n > len(data)-off-walHeader {
		return 0, nil, 0, false
	}
	ops = h[walHeader : walHeader+n]
	if crc32.Update(crc32.Checksum(h[8:16], crcTable), crcTable, ops) != binary.BigEndian.Uint32(h[16:20]) {
		return 0, nil, 0, false
	}
	return binary.BigEndian.Uint64(h[8:16]), ops, walHeader + n, true
}

// segRead is a segment read from its start: its records in order, where
// reading stopped, and, if damage stopped it, what and the records after.
type segRead struct {
	recs  []walRec
	stop  int
	next  uint64 // the record expected at stop
	why   string
	later []walRec // records numbered next or later, after stop
}

// readSegment reads the segment at path, whose first record is first.
// Reading stops at the first record that is not whole, valid and next.
// A crash leaves there a torn record, then zeros or a recycled segment's
// older records; so a record numbered next or later, further on, means
// damage (later).
func readSegment(path string, first uint64) (*segRead, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &segRead{next: first}
	off := 0
	for {
		lsn, ops, n, ok := recordAt(data, off)
		if !ok || lsn != r.next {
			break
		}
		r.recs = append(r.recs, walRec{off: off, lsn: lsn, ops: ops})
		r.next++
		off += n
	}
	r.stop = off
	magic := binary.BigEndian.AppendUint32(nil, walMagic)
	for p := off; p < len(data); {
		i := bytes.Index(data[p:], magic)
		if i < 0 {
			break
		}
		p += i
		lsn, ops, n, ok := recordAt(data, p)
		if ok && lsn >= r.next && (len(r.later) == 0 || lsn > r.later[len(r.later)-1].lsn) {
			r.later = append(r.later, walRec{off: p, lsn: lsn, ops: ops})
			p += n
			continue
		}
		p++
	}
	if len(r.later) > 0 {
		r.why = damageAt(data, off, r.next)
	}
	return r, nil
}

// damageAt says what is wrong with the record expected at off.
func damageAt(data []byte, off int, want uint64) string {
	h := data[off:]
	switch {
	case len(h) < walHeader:
		return "the segment ends inside its header"
	case binary.BigEndian.Uint32(h[:4]) != walMagic:
		return "its header is damaged (no record mark)"
	case int(binary.BigEndian.Uint32(h[4:8])) > len(h)-walHeader:
		return "its header gives a length past the segment's end"
	}
	if lsn, _, _, ok := recordAt(data, off); ok {
		return fmt.Sprintf("it is numbered %d, not %d", lsn, want)
	}
	return "its checksum does not match its content"
}

// readLog calls fn with each record of segs numbered after applied, in
// order, to the end of the log or to damage, which it returns (nil if
// none) with what the log holds after it.
func (l *Layout) readLog(segs []walSeg, applied uint64, fn func(s walSeg, lsn uint64, ops []byte) error) (last uint64, dmg *LogDamage, err error) {
	last = applied
	var prev walSeg
	prevStop := 0
	for i, s := range segs {
		r, err := readSegment(s.path, s.first)
		if err != nil {
			return last, nil, err
		}
		recs := r.recs
		if len(r.later) > 0 && r.next <= last {
			// The damage is in a record the file holds already: those
			// after it are read on.
			recs = append(recs, r.later...)
		}
		for k, rec := range recs {
			if rec.lsn <= last {
				continue // in the file already
			}
			if rec.lsn != last+1 {
				dmg = &LogDamage{Segment: filepath.Base(prev.path), Offset: prevStop, Record: last + 1,
					What: fmt.Sprintf("records %d to %d are missing: the next segment, %s, begins with record %d", last+1, rec.lsn-1, filepath.Base(s.path), rec.lsn)}
				if prev.path == "" || k > 0 {
					dmg.Segment, dmg.Offset = filepath.Base(s.path), rec.off
					dmg.What = fmt.Sprintf("records %d to %d are missing", last+1, rec.lsn-1)
				}
				return last, dmg, l.lostAfter(dmg, recs[k:], segs[i+1:])
			}
			if err := fn(s, rec.lsn, rec.ops); err != nil {
				return last, nil, err
			}
			last = rec.lsn
		}
		if len(r.later) > 0 && r.next > last {
			dmg = &LogDamage{Segment: filepath.Base(s.path), Offset: r.stop, Record: r.next, What: r.why}
			return last, dmg, l.lostAfter(dmg, r.later, segs[i+1:])
		}
		prev, prevStop = s, r.stop
	}
	return last, nil, nil
}

// lostAfter fills in what d loses: recs, and every record of segs, and
// the keys of the Named bucket they write.
func (l *Layout) lostAfter(d *LogDamage, recs []walRec, segs []walSeg) error {
	named := l.index(l.Named)
	written := map[string]bool{}
	add := func(recs []walRec) {
		for _, r := range recs {
			if d.Lost == 0 {
				d.First = r.lsn
			}
			d.Lost++
			d.Last = r.lsn
			_ = l.forOps(r.ops, func(o op) error {
				if o.kind != opSeq && o.bucket == named {
					written[string(o.key)] = true
				}
				return nil
			})
		}
	}
	add(recs)
	for _, s := range segs {
		r, err := readSegment(s.path, s.first)
		if err != nil {
			return err
		}
		add(r.recs)
		add(r.later)
	}
	ids := make([]string, 0, len(written))
	for id := range written {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	d.TaskCount = len(ids)
	d.Tasks = ids[:min(len(ids), maxLostTasks)]
	return nil
}

// op is one op of a log record.
type op struct {
	kind     byte
	bucket   int
	key, val []byte
	seq      uint64
}

// forOps calls fn with each op of the record ops p, in order.
func (l *Layout) forOps(p []byte, fn func(o op) error) error {
	for len(p) > 0 {
		if len(p) < 2 || int(p[1]) >= len(l.Buckets) {
			return errors.New("an op is cut short or names no bucket")
		}
		o := op{kind: p[0], bucket: int(p[1])}
		p = p[2:]
		switch o.kind {
		case opSeq:
			n, m := binary.Uvarint(p)
			if m <= 0 {
				return errors.New("a sequence is cut short")
			}
			o.seq, p = n, p[m:]
		case opDelete, opPut:
			k, rest, ok := uvarintBytes(p)
			if !ok {
				return errors.New("a key is cut short")
			}
			o.key, p = k, rest
			if o.kind == opPut {
				v, rest, ok := uvarintBytes(p)
				if !ok {
					return errors.New("a value is cut short")
				}
				o.val, p = v, rest
			}
		default:
			return fmt.Errorf("unknown op %d", o.kind)
		}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// badOps returns the ops of record lsn (in segment seg) that bbolt
// refuses.
func (l *Layout) badOps(seg string, lsn uint64, ops []byte) []BadOp {
	var bad []BadOp
	n := 0
	_ = l.forOps(ops, func(o op) error {
		n++
		if o.kind == opPut {
			if what := LimitProblem(o.key, o.val); what != "" {
				bad = append(bad, BadOp{Segment: seg, Record: lsn, Op: n, Bucket: l.name(o.bucket), What: what})
			}
		}
		return nil
	})
	return bad
}

// applyOps applies one record's ops to tx; with skipBad, it leaves out
// those bbolt refuses.
func (l *Layout) applyOps(tx *bolt.Tx, p []byte, skipBad bool) error {
	return l.forOps(p, func(o op) error {
		b := tx.Bucket(l.Buckets[o.bucket])
		if f := l.fill(o.bucket); f != 0 {
			b.FillPercent = f
		}
		switch o.kind {
		case opSeq:
			return b.SetSequence(o.seq)
		case opDelete:
			return b.Delete(o.key)
		}
		if skipBad && LimitProblem(o.key, o.val) != "" {
			return nil
		}
		return b.Put(o.key, o.val)
	})
}

func uvarintBytes(p []byte) (b, rest []byte, ok bool) {
	n, m := binary.Uvarint(p)
	if m <= 0 || n > uint64(len(p)-m) {
		return nil, nil, false
	}
	return p[m : m+int(n)], p[m+int(n):], true
}

// Recover applies to db, a file of layout l, the log records in its log
// directory (Dir) that it does not hold yet, in one synced transaction,
// recycles every segment and returns the log, ready to append after the
// last record (for Start). What it cannot apply is a *LogError, unless
// mode lets it leave that out (the Recovery says what it did).
func Recover(db *bolt.DB, l *Layout, mode Mode) (*Log, *Recovery, error) {
	if err := l.check(); err != nil {
		return nil, nil, err
	}
	if mode.SegmentBytes <= 0 {
		mode.SegmentBytes = defaultSegMB << 20
	}
	dir := Dir(db.Path())
	rec := &Recovery{Left: LogError{Path: db.Path(), Dir: dir}}
	last, marked, err := l.walMark(db)
	if err != nil {
		return nil, nil, err
	}
	// (Open checks before it marks the file.)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) && marked && !mode.Server {
		rec.Left.Missing, rec.Left.Applied = true, last
		if !mode.AcceptLoss {
			return nil, nil, &rec.Left
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("write-ahead log: %w", err)
	}
	segs, spares, nspare, err := listWAL(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("write-ahead log: %w", err)
	}
	var dmg *LogDamage
	if len(segs) > 0 || marked != mode.Server || rec.Left.Missing {
		if last, dmg, err = l.replay(db, segs, last, mode, rec); err != nil {
			return nil, nil, err
		}
		crashpoint.Hit("recover.commit")
	}
	if dmg != nil {
		if rec.Aside, segs, err = setAside(dir, segs, dmg.Segment); err != nil {
			return nil, nil, fmt.Errorf("write-ahead log: keep the damaged segments aside: %w", err)
		}
	}
	w := &Log{dir: dir, segBytes: mode.SegmentBytes, noSync: mode.NoSync, segs: segs, spares: freshSpares(spares, last), nspare: nspare, next: last + 1}
	if err := w.close(); err != nil { // every segment is in the file now
		return nil, nil, fmt.Errorf("write-ahead log: %w", err)
	}
	return w, rec, nil
}

// replay applies segs' records after last to db in one transaction, and
// marks the log open or not (mode.Server); it returns the last record
// applied and the damage it stopped at, if mode accepts it.
func (l *Layout) replay(db *bolt.DB, segs []walSeg, last uint64, mode Mode, rec *Recovery) (uint64, *LogDamage, error) {
	open := last
	var dmg *LogDamage
	err := db.Update(func(tx *bolt.Tx) error {
		var err error
		last, dmg, err = l.readLog(segs, last, func(s walSeg, lsn uint64, ops []byte) error {
			if bad := l.badOps(filepath.Base(s.path), lsn, ops); len(bad) > 0 {
				rec.Left.BadCount += len(bad)
				rec.Left.Bad = append(rec.Left.Bad, bad[:min(len(bad), maxBadOps-len(rec.Left.Bad))]...)
			}
			if len(rec.Left.Bad) > 0 && !mode.SkipBad {
				return nil // only read on: nothing is applied
			}
			if err := l.applyOps(tx, ops, mode.SkipBad); err != nil {
				return &DamagedError{Path: db.Path(), What: fmt.Sprintf("record %d of its write-ahead log %s: %v", lsn, Dir(db.Path()), err)}
			}
			return nil
		})
		switch {
		case err != nil:
			return err
		case dmg != nil && !mode.AcceptLoss, rec.Left.BadCount > 0 && !mode.SkipBad:
			rec.Left.Damage = dmg
			return &rec.Left
		}
		rec.Left.Damage = dmg
		if rec.Left.BadCount > 0 && l.Dropped != nil {
			if err := l.Dropped(tx); err != nil {
				return err
			}
		}
		if err := l.setOpen(tx, mode.Server); err != nil {
			return err
		}
		if last != open {
			if err := l.putApplied(tx, last); err != nil {
				return err
			}
		}
		crashpoint.Hit("recover.apply")
		return nil
	})
	return last, dmg, err
}

// freshSpares removes the spares that may hold records numbered above
// last, and returns the others: records a new segment's would follow
// could be taken for damage (readSegment).
func freshSpares(spares []string, last uint64) []string {
	kept := spares[:0]
	for _, sp := range spares {
		if _, upTo, ok := parseSpare(filepath.Base(sp)); ok && upTo <= last {
			kept = append(kept, sp)
			continue
		}
		_ = os.Remove(sp)
	}
	return kept
}

// setAside moves the segment named damaged and those after it (the
// file holds every record before the damage) into a new directory of
// dir, which it returns with the segments left.
func setAside(dir string, segs []walSeg, damaged string) (string, []walSeg, error) {
	k := slices.IndexFunc(segs, func(s walSeg) bool { return filepath.Base(s.path) == damaged })
	if k < 0 {
		return "", segs, nil
	}
	aside := filepath.Join(dir, "damaged-"+time.Now().UTC().Format("20060102T150405Z"))
	if err := os.Mkdir(aside, 0o700); err != nil {
		return "", nil, err
	}
	for _, s := range segs[k:] {
		if err := os.Rename(s.path, filepath.Join(aside, filepath.Base(s.path))); err != nil {
			return "", nil, err
		}
	}
	if err := syncdir.Sync(aside); err != nil {
		return "", nil, err
	}
	return aside, segs[:k], syncdir.Sync(dir)
}

// Record is a log record read back: its offset in its segment, its
// number and its ops.
type Record struct {
	Offset int
	LSN    uint64
	Ops    []byte
}

// ReadSegment reads the segment at path, whose first record is first, as
// recovery does: its records from the start, in order, up to the first
// that is not whole, valid and next, where reading stopped (stop).
func ReadSegment(path string, first uint64) (recs []Record, stop int, err error) {
	r, err := readSegment(path, first)
	if err != nil {
		return nil, 0, err
	}
	for _, rec := range r.recs {
		recs = append(recs, Record{Offset: rec.off, LSN: rec.lsn, Ops: rec.ops})
	}
	return recs, r.stop, nil
}
