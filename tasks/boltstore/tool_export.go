package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/tasks/boltstore/internal/engine"
	"github.com/a2ad/a2ad/tasks/record"
)

// ErrOldSchema is ExportFile's error for a store file of an older
// schema: a2ad serve migrates it when it starts on it.
var ErrOldSchema = errors.New("the store file is of an older schema: start a2ad on it once to migrate it, stop it, then export")

// ExportFile hands fn every task of the store file at path, in id order,
// and then every dead letter to dead, all in one read transaction: what
// is handed over is one moment of the store. No process may be writing
// the file: it is opened read-only, and a file a server holds is
// ErrLocked. lockTimeout <= 0 means DefaultToolLockTimeout. fn runs
// inside the transaction, one task at a time, so memory stays that of a
// task; what it is handed is its own. The first error fn or dead
// returns ends the export and is returned.
func ExportFile(ctx context.Context, path string, lockTimeout time.Duration, fn func(*tasks.Exported) error, dead func(tasks.DeadLetter) error) error {
	db, err := openReadOnly(path, lockTimeout)
	if err != nil {
		return err
	}
	defer db.Close()
	return engine.ViewGuarded(db, func(btx *bolt.Tx) error {
		tx := wrap(btx)
		if v := string(tx.Bucket(bucketMeta).Get(keySchema)); v != schemaVersion {
			return fmt.Errorf("export task store %s: schema %q, want %q: %w", path, v, schemaVersion, ErrOldSchema)
		}
		c := tx.Bucket(bucketTasks).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			e, err := exportTask(tx, string(k), v)
			if err != nil {
				return fmt.Errorf("export task %s: %w", k, err)
			}
			if err := fn(e); err != nil {
				return err
			}
		}
		dc := tx.Bucket(bucketDead).Cursor()
		for k, v := dc.First(); k != nil; k, v = dc.Next() {
			d, err := decodeDeadLetter(k, v)
			if err != nil {
				return err
			}
			if err := dead(d); err != nil {
				return err
			}
		}
		return nil
	})
}

// exportTask reads task id, whose head value is v, and everything of it.
func exportTask(tx *engine.Tx, id string, v []byte) (*tasks.Exported, error) {
	r, _, err := decodeHead(id, v)
	if err != nil {
		return nil, err
	}
	r.ArtifactSizes, r.HistoryLen = nil, 0 // the importing store counts its own
	e := &tasks.Exported{Record: r}
	if err := exportBody(tx, id, e); err != nil {
		return nil, err
	}
	for _, m := range r.MessageIDs {
		bound, hash, ok := getIdem(tx, r.Owner, m)
		if !ok || bound != id {
			continue // Check reports it; a key the task does not hold is not its
		}
		e.Keys = append(e.Keys, tasks.ExportedKey{MessageID: m, Hash: hash})
	}
	return e, exportDeliveries(tx, id, e)
}

// exportBody reads task id's body, every key of it in one pass.
func exportBody(tx *engine.Tx, id string, e *tasks.Exported) error {
	prefix := appendBodyPrefix(nil, id, 0)
	prefix = prefix[:len(prefix)-1]
	c := tx.Bucket(bucketBody).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(k) > len(prefix); k, v = c.Next() {
		rest := k[len(prefix)+1:]
		var err error
		switch k[len(prefix)] {
		case kindArtifact:
			err = exportArtifact(e, rest, v)
		case kindHistory:
			var m = e.History
			msg, derr := record.DecodeMessage(v, record.IDsOf(&e.Record.Task))
			e.History, err = append(m, msg), derr
		case kindInput:
			e.Record.Input = json.RawMessage(bytes.Clone(v))
		case kindMsgID:
			e.Record.MessageIDs = append(e.Record.MessageIDs, string(rest))
		case kindEvent:
			ev, derr := record.DecodeEvent(v, record.IDsOf(&e.Record.Task))
			e.Events, err = append(e.Events, ev), derr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// exportArtifact adds body key rest (i(4) j(4)) of kindArtifact, value v.
func exportArtifact(e *tasks.Exported, rest, v []byte) error {
	if len(rest) != 8 {
		return fmt.Errorf("artifact key %x does not parse", rest)
	}
	i, j := binary.BigEndian.Uint32(rest), binary.BigEndian.Uint32(rest[4:])
	if j == 0 {
		if int(i) != len(e.Artifacts) {
			return fmt.Errorf("artifact %d out of order", i)
		}
		a, err := record.DecodeArtifact(v)
		e.Artifacts = append(e.Artifacts, tasks.ExportedArtifact{Artifact: a})
		return err
	}
	if int(i) >= len(e.Artifacts) {
		return fmt.Errorf("chunk of artifact %d before it", i)
	}
	ps, err := record.DecodeChunk(v)
	e.Artifacts[i].Chunks = append(e.Artifacts[i].Chunks, ps)
	return err
}

// exportDeliveries reads task id's pending deliveries.
func exportDeliveries(tx *engine.Tx, id string, e *tasks.Exported) error {
	prefix := pendingKey(id, "")
	ob := tx.Bucket(bucketOutbox)
	c := tx.Bucket(bucketPending).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(v) != 16 {
			return fmt.Errorf("pending delivery %q does not parse", k)
		}
		var o outboxEntry
		if err := json.Unmarshal(ob.Get(v[:8]), &o); err != nil {
			return fmt.Errorf("delivery %x: %w", v[:8], err)
		}
		e.Deliveries = append(e.Deliveries, tasks.ExportedDelivery{
			ConfigID: string(k[len(prefix):]), Seq: binary.BigEndian.Uint64(v[8:]), Attempts: o.Attempts,
			NextAt: o.NextAt, LastError: o.LastError, CreatedAt: o.CreatedAt,
		})
	}
	return nil
}
