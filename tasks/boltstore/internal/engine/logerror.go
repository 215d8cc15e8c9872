package engine

import (
	"errors"
	"fmt"
	"strings"
)

// LogError says that the write-ahead log holds writes recovery cannot
// apply as they are. Nothing was applied: Repair applies the rest.
type LogError struct {
	Path string // the store file
	Dir  string // its log
	// Bad are the ops bbolt refuses, at most maxBadOps (BadCount counts
	// them all).
	Bad      []BadOp
	BadCount int
	// Damage is where the log is damaged, and what is lost with it.
	Damage *LogDamage
	// Missing: the log directory is gone, and the file says a server
	// had it open; the writes after record Applied were only in it.
	Missing bool
	Applied uint64
}

// BadOp is an op of a log record that bbolt refuses.
type BadOp struct {
	Segment string // the segment's file name
	Record  uint64 // the record's number
	Op      int    // which op of the record, from 1
	Bucket  string
	What    string
}

func (b BadOp) String() string {
	return fmt.Sprintf("record %d (segment %s) op %d puts %s into bucket %s", b.Record, b.Segment, b.Op, b.What, b.Bucket)
}

// LogDamage is a record that does not read back, and what the log holds
// after it, which recovery cannot apply without it.
type LogDamage struct {
	Segment string // the segment's file name
	Offset  int    // the damaged record's byte in it
	Record  uint64 // its number
	What    string
	// Lost are the records after it that read back: how many, their
	// numbers, and the tasks they write: the keys they put or delete in
	// the layout's Named bucket, the store's task ids (at most
	// maxLostTasks; TaskCount counts them all).
	Lost        int
	First, Last uint64
	Tasks       []string
	TaskCount   int
}

const (
	maxBadOps    = 20
	maxLostTasks = 20
)

// ErrLog is matched (errors.Is) by every *LogError, as is ErrDamaged.
var ErrLog = errors.New("the store's write-ahead log cannot be applied as it is")

func (e *LogError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the store file %s cannot be opened as it is: ", e.Path)
	switch {
	case e.Missing:
		fmt.Fprintf(&b, "its write-ahead log %s is missing, but the file says a server had it open and did not close it: the writes after record %d, the last the file holds, were only in the log", e.Dir, e.Applied)
	case e.Damage != nil:
		d := e.Damage
		fmt.Fprintf(&b, "its write-ahead log %s is damaged: segment %s, record %d at byte %d: %s", e.Dir, d.Segment, d.Record, d.Offset, d.What)
		if d.Lost > 0 {
			fmt.Fprintf(&b, "; after it the log holds %d acknowledged records (%d to %d) that cannot be applied without it, writing %d tasks: %s", d.Lost, d.First, d.Last, d.TaskCount, strings.Join(d.Tasks, " "))
			if d.TaskCount > len(d.Tasks) {
				fmt.Fprintf(&b, " and %d more", d.TaskCount-len(d.Tasks))
			}
		}
	}
	if len(e.Bad) > 0 {
		if e.Missing || e.Damage != nil {
			b.WriteString("; and ")
		}
		fmt.Fprintf(&b, "its write-ahead log %s holds %d ops bbolt refuses: ", e.Dir, e.BadCount)
		for i, op := range e.Bad {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(op.String())
		}
		if e.BadCount > len(e.Bad) {
			fmt.Fprintf(&b, "; and %d more", e.BadCount-len(e.Bad))
		}
	}
	return b.String()
}

// Is makes errors.Is(err, ErrLog) and errors.Is(err, ErrDamaged) hold.
func (e *LogError) Is(target error) bool { return target == ErrLog || target == ErrDamaged }
