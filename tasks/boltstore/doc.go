// Package boltstore is the tasks.Store kept in one bbolt file.
//
// Buckets, all created at open, with composite keys (big-endian numbers so
// they sort):
//
//	tasks   taskID                          → seq(8) 0x01 len(owner) owner
//	                                          historyLen head JSON: the task
//	                                          without what grows (layout.go)
//	body    len(taskID) taskID 'a' i(4) j(4)
//	                                        → artifact i JSON (j = 0), or
//	                                          parts appended to it (j > 0)
//	        len(taskID) taskID 'h' n(8)     → history message n JSON
//	        len(taskID) taskID 'i'          → the current call's input JSON
//	        len(taskID) taskID 'm' messageID
//	                                        → (empty) a message id the task
//	                                          holds
//	        len(taskID) taskID 's' seq(8)   → event JSON (layout.go)
//	active  taskID                          → (empty) the non-terminal index
//	owners  len(owner) owner taskID         → (empty) the index by owner
//	idem    len(owner) owner messageID      → taskID 0x00 sha256(message)
//	expiry  updatedAt(8) taskID             → (empty) terminal tasks by age
//	recent  len(owner) owner listTime(8) taskID
//	                                        → statusTime(8) len(state) state contextID
//	                                          the listing index (list.go)
//	counts  len(owner) owner                → count(8) of owner's entries in recent
//	outbox  id(8)                           → push delivery JSON: task and webhook
//	                                          ids, attempts, schedule (outbox.go)
//	pending len(taskID) taskID configID     → id(8) seq(8): the one delivery
//	                                          pending per webhook of a task
//	due     nextAt(8) id(8)                 → (empty) deliveries by due time
//	dead    id(8)                           → dead letter JSON
//	usage   len(owner) owner                → bytes(8) the owner's tasks take (usage.go)
//	meta    "schema"                        → schema version (schemaVersion;
//	                                          older ones are migrated at open,
//	                                          migrate.go), which is also the
//	                                          version of the record format
//	                                          (package record)
//	        "migrating"                     → the version a migration that
//	                                          has not finished goes to
//	        "usage"                         → "1" once usage is kept;
//	                                          a store without it gets it at open
//	        "wal", "walopen"                → the last log record the file holds;
//	                                          set while a server has the log open (package engine)
//
// The JSON values are the store's record format (package record), not the A2A
// wire format: the wire codecs take no part in writing or reading them.
//
// Every change is one transaction of the engine (package engine, which
// knows these buckets only as a list: layout in store.go). Writes from
// concurrent callers are grouped by its single writer goroutine into one
// record of its write-ahead log and one fdatasync, without any added
// delay: whatever queued while the previous record was syncing goes into
// the next one. The changes are kept in memory, in layers, until a
// checkpoint writes them to the file in one synced bbolt transaction.
//
// The store's files: the layout (layout.go, body.go, encoded.go, index.go,
// list.go, usage.go, outbox.go, deadletters.go, leases.go, limits.go,
// migrate.go, inspect.go) and the offline tools, tool_*.go (backup,
// compact, check, export, and a damaged file or log: damage, repair).
package boltstore
