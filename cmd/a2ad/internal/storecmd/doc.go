// Package storecmd is a2ad store: the operator's tools for a store
// (backup, compact, check, repair, and migrate into PostgreSQL). A bbolt
// file no server holds is read and written offline; a running server's
// store is copied through its admin listener (admin.Client.Backup); a
// PostgreSQL store is checked read-only while servers run. It also says
// what to do about a damaged store, for serve as for the tools.
package storecmd
