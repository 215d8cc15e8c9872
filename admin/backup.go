package admin

import (
	"net/http"
	"strconv"
	"time"

	"github.com/rs/zerolog"
)

// BackupPath is the route of the backup endpoint.
const BackupPath = "/admin/store/backup"

// backupHandler streams a consistent copy of the store file, taken in one
// read transaction while the server goes on writing. It applies no access
// control: mount it where only operators reach it (Server does). A copy
// that fails once started ends short of its Content-Length, which the
// client sees. Without a source (a store that is a database, which its
// own tools back up), it answers 501.
func backupHandler(src BackupSource, log zerolog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if src == nil {
			http.Error(w, "backups copy a bbolt store file; this a2ad keeps its tasks in PostgreSQL: back it up with pg_dump", http.StatusNotImplemented)
			return
		}
		start := time.Now()
		started := false
		n, err := src.Backup(r.Context(), w, func(size int64) {
			h := w.Header()
			h.Set("Content-Type", "application/octet-stream")
			h.Set("Content-Length", strconv.FormatInt(size, 10))
			h.Set("Content-Disposition", `attachment; filename="a2ad-backup.db"`)
			h.Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
			started = true
		})
		if err != nil {
			log.Error().Err(err).Int64("bytes", n).Msg("store backup failed")
			if !started {
				http.Error(w, "store backup failed", http.StatusInternalServerError)
			}
			return
		}
		log.Info().Int64("bytes", n).Dur("duration", time.Since(start)).Msg("store backup")
	}
}
