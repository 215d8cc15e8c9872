package storecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/admincmd"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
	"github.com/a2ad/a2ad/internal/syncdir"
	"github.com/a2ad/a2ad/tasks/boltstore"
	"github.com/a2ad/a2ad/tasks/stores"
)

const storeUsage = `a2ad store: tools for the store file. They take flags only.

Usage:
  a2ad store backup  [--server URL] --out FILE  copy the store of a running a2ad, through its
                                                GET /admin/store/backup (loopback callers only;
                                                --server defaults to http://127.0.0.1:8081)
  a2ad store backup  --store FILE --out FILE    copy a store file no server holds
  a2ad store compact --store FILE [--out FILE]  rewrite a store file no server holds without its
                                                free space; in place unless --out, keeping the
                                                original as FILE.bak
  a2ad store check   --store FILE               check a store file no server holds: every record
                                                decodes, every index agrees with the tasks
  a2ad store check   --store postgres://...     check a PostgreSQL store, writing nothing (servers
                                                may run): schema version, indexes, invariants
  a2ad store repair  --store FILE [--accept-loss]
                                                apply the write-ahead log of a store file no
                                                server holds as far as it can: every write but
                                                the ops bbolt refuses, each named; with
                                                --accept-loss, a damaged log up to the damage
                                                (the damaged segments kept aside) or a missing
                                                log; then check the file
  a2ad store migrate --from FILE --to postgres://... [--force]
                                                copy a store file no server holds into a
                                                PostgreSQL database no server serves: every
                                                task, event, key, webhook and delivery; the
                                                database must hold no task unless --force (which
                                                adds, and fails on an id it holds already);
                                                the rows of each kind are compared at the end

A backup is written to a temporary file, synced, checked, and only then
renamed to --out. A write-ahead log that cannot be applied as it is (a
damaged record with others after it, an op bbolt refuses, a missing log)
ends serve and check with exit code 3 and one line that says what a2ad
store repair would do. Exit codes: 0 done (check: no problems), 1 failed or
problems found, 2 bad usage, 3 the store file is damaged (cut short, or
pages that cannot be read): restore the last backup.
`

// ExitDamaged is the exit code of serve and of the store tools when the
// store file is damaged: cut short, or with pages bbolt cannot read.
// Starting again does not help, so a service manager should not (the
// systemd unit's RestartPreventExitStatus); no other path exits with it.
const ExitDamaged = 3

// Damaged prints the one line for a damaged store file, followed by
// advice, and returns ExitDamaged; it returns -1 if err is not a damaged
// store. A log that cannot be applied as it is gets logDamaged's line. The line names the store file the error names, or subject if not
// "" (the store a copy was taken from).
func Damaged(stderr io.Writer, err error, subject, advice string) int {
	var le *boltstore.LogError
	if errors.As(err, &le) { // its own line and advice
		return logDamaged(stderr, err, le.Path)
	}
	var de *boltstore.DamagedError
	if !errors.As(err, &de) {
		return -1
	}
	if subject == "" {
		subject = "the store file " + de.Path
	}
	fmt.Fprintf(stderr, "a2ad: %s is damaged: %s; %s\n", subject, de.What, advice)
	return ExitDamaged
}

// logDamaged prints the one line for a store whose write-ahead log
// cannot be applied as it is (a *boltstore.LogError), with what a2ad
// store repair would do about it, and returns ExitDamaged; -1 if err is
// no such error.
func logDamaged(stderr io.Writer, err error, path string) int {
	var le *boltstore.LogError
	if !errors.As(err, &le) {
		return -1
	}
	repair := "a2ad store repair --store " + path
	var advice string
	switch {
	case le.Missing:
		advice = "put the directory back if it was moved; if the file is a copy (made otherwise than by a2ad store backup), nothing is lost; to go on without the log, accepting that loss: " + repair + " --accept-loss"
	case le.Damage != nil:
		advice = "put the segment back from a copy if there is one; to apply the log up to the damage, accepting that loss (the damaged segments are kept aside in " + le.Dir + "): " + repair + " --accept-loss"
	default:
		advice = "every other write is intact: to apply the log without those ops, run " + repair
	}
	fmt.Fprintf(stderr, "a2ad: %v; %s\n", le, advice)
	return ExitDamaged
}

// RestoreAdvice is what to do about the damaged store file at path.
func RestoreAdvice(path string) string {
	return "restore the last backup or run a2ad store check --store " + path
}

// Run runs "a2ad store <tool> [flags]" and returns the exit code.
func Run(ctx context.Context, args []string, env cli.Env) int {
	stdout, stderr := env.Stdout, env.Stderr
	if len(args) == 0 {
		fmt.Fprint(stderr, storeUsage)
		return 2
	}
	switch args[0] {
	case "backup":
		return runStoreBackup(ctx, args[1:], env)
	case "compact":
		return runStoreCompact(args[1:], stdout, stderr)
	case "check":
		return runStoreCheck(ctx, args[1:], stdout, stderr)
	case "migrate":
		return runStoreMigrate(ctx, args[1:], stdout, stderr)
	case "repair":
		return runStoreRepair(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, storeUsage)
		return 0
	}
	return cli.UnknownCommand(stderr, "a2ad", "store tool", args[0], []string{"backup", "compact", "check", "migrate", "repair"}, storeUsage)
}

// storeFlags are the flags the tools share.
type storeFlags struct {
	fs          *flag.FlagSet
	store, out  string
	lockTimeout time.Duration
}

func newStoreFlags(tool string, stderr io.Writer) *storeFlags {
	f := &storeFlags{fs: flag.NewFlagSet("a2ad store "+tool, flag.ContinueOnError)}
	f.fs.DurationVar(&f.lockTimeout, "lock-timeout", boltstore.DefaultToolLockTimeout, "how long to wait for a store file another process holds")
	return f
}

// parse returns the exit code to end with, or -1 to go on.
func (f *storeFlags) parse(args []string, stderr io.Writer) int {
	if code := cli.Parse(f.fs, args, stderr); code >= 0 {
		return code
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "a2ad: unexpected argument %q (the tools take flags only)\n", f.fs.Arg(0))
		return 2
	}
	return -1
}

// notAFile ends tool with a usage error when --store names a store of a
// kind that is no file (a database); -1 when it names a file, whose path
// --store then is.
func (f *storeFlags) notAFile(tool string, stderr io.Writer) int {
	k, target := stores.Of(f.store)
	if !k.File {
		return cli.UsageError(stderr, fmt.Sprintf("%s works on a bbolt store file, and %s is %s: %s", tool, stores.Name(f.store), k.Noun, k.Instead[tool]))
	}
	f.store = target
	return -1
}

func runStoreBackup(ctx context.Context, args []string, env cli.Env) int {
	stdout, stderr := env.Stdout, env.Stderr
	f := newStoreFlags("backup", stderr)
	var server string
	f.fs.StringVar(&server, "server", "", "base URL of the running a2ad's admin listener (default "+admin.DefaultURL+", or A2AD_SERVER, unless --store)")
	f.fs.StringVar(&f.store, "store", "", "store file no server holds, to copy offline")
	f.fs.StringVar(&f.out, "out", "", "file to write the copy to; replaced atomically if it exists")
	if code := f.parse(args, stderr); code >= 0 {
		return code
	}
	if server == "" && f.store == "" {
		// As a2ad tasks and a2ad push: the running server's admin listener.
		server = env.AdminServer()
	}
	if code := f.notAFile("store backup", stderr); code >= 0 {
		return code
	}
	switch {
	case server != "" && f.store != "":
		return cli.UsageError(stderr, "store backup: give either --server URL (a running a2ad) or --store FILE (a store no server holds)")
	case f.out == "":
		return cli.UsageError(stderr, "store backup: give the file to write with --out")
	}

	var (
		copyTo func(w io.Writer) (int64, error)
		from   string
	)
	if server != "" {
		c, code := admincmd.NewClient("store backup", server, stderr)
		if c == nil {
			return code
		}
		defer c.Close()
		from = "the a2ad at " + server
		copyTo = func(w io.Writer) (int64, error) { return c.Backup(ctx, w) }
	} else {
		if sameFile(f.store, f.out) {
			return cli.UsageError(stderr, "store backup: --out is the store file itself")
		}
		from = f.store
		copyTo = func(w io.Writer) (int64, error) { return boltstore.BackupFile(ctx, f.store, w, f.lockTimeout) }
	}
	if boltstore.InUse(f.out) {
		fmt.Fprintf(stderr, "a2ad: %s is in use by a running a2ad: it is a live store, not a place for a backup\n", f.out)
		return 1
	}
	return f.writeBackup(stdout, stderr, from, copyTo)
}

// writeBackup copies through copyTo into a temporary file beside f.out,
// checks that the copy opens as a store, and only then puts it in
// f.out's place, durably; from names the source in messages. It returns
// the exit code.
func (f *storeFlags) writeBackup(stdout, stderr io.Writer, from string, copyTo func(w io.Writer) (int64, error)) int {
	tmp, err := os.CreateTemp(filepath.Dir(f.out), filepath.Base(f.out)+".*.tmp")
	if err != nil {
		fmt.Fprintln(stderr, "a2ad: store backup:", err)
		return 1
	}
	keep := false
	defer func() {
		if !keep {
			os.Remove(tmp.Name())
		}
	}()
	n, err := copyTo(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case errors.Is(err, boltstore.ErrLocked):
		fmt.Fprintf(stderr, "a2ad: the store %s is in use by a running a2ad: use --server to copy it through the server\n", f.store)
		return 1
	case errors.Is(err, boltstore.ErrDamaged):
		return Damaged(stderr, err, "", RestoreAdvice(f.store)+"; "+f.out+" was not written")
	case err != nil:
		fmt.Fprintf(stderr, "a2ad: store backup from %s: %v; %s was not written\n", from, err, f.out)
		return 1
	}
	// Check the copy before it takes the place of an earlier backup. It
	// holds every change: it needs no log, whatever its source said.
	err = boltstore.SealCopy(tmp.Name())
	var r *boltstore.Report
	if err == nil {
		r, err = boltstore.Check(tmp.Name(), f.lockTimeout)
	}
	var de *boltstore.DamagedError
	switch {
	case f.store != "" && errors.As(err, &de):
		// The copy is the file byte for byte: the file is damaged.
		return Damaged(stderr, err, "the store file "+f.store, RestoreAdvice(f.store)+"; "+f.out+" was not written")
	case errors.As(err, &de):
		// A download that is no store, or a damaged one: the copy's name
		// says nothing.
		fmt.Fprintf(stderr, "a2ad: the copy from %s does not open as a store: %s; %s was not written\n", from, de.What, f.out)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "a2ad: the copy from %s does not open as a store: %v; %s was not written\n", from, err, f.out)
		return 1
	}
	if err := os.Rename(tmp.Name(), f.out); err != nil {
		fmt.Fprintln(stderr, "a2ad: store backup:", err)
		return 1
	}
	keep = true
	if err := syncdir.Sync(filepath.Dir(f.out)); err != nil {
		fmt.Fprintln(stderr, "a2ad: store backup:", err)
		return 1
	}
	fmt.Fprintf(stdout, "copied %d bytes from %s to %s (synced to disk)\n", n, from, f.out)
	if !r.Clean() {
		fmt.Fprintf(stderr, "a2ad: the backup was written, but it has problems, which the store it copies has too:\n")
	}
	return printReport(stdout, stderr, f.out, r)
}

func runStoreCompact(args []string, stdout, stderr io.Writer) int {
	f := newStoreFlags("compact", stderr)
	f.fs.StringVar(&f.store, "store", "", "store file to compact; no server may hold it")
	f.fs.StringVar(&f.out, "out", "", "write the compacted copy to this new file and leave --store as it is")
	if code := f.parse(args, stderr); code >= 0 {
		return code
	}
	switch {
	case f.store == "":
		return cli.UsageError(stderr, "store compact: give the store file with --store")
	}
	if code := f.notAFile("store compact", stderr); code >= 0 {
		return code
	}
	res, err := boltstore.Compact(f.store, f.out, f.lockTimeout)
	switch {
	case errors.Is(err, boltstore.ErrLocked):
		fmt.Fprintf(stderr, "a2ad: the store %s is in use by a running a2ad: stop it first (compact rewrites the file offline)\n", f.store)
		return 1
	case errors.Is(err, boltstore.ErrDamaged):
		return Damaged(stderr, err, "", RestoreAdvice(f.store)+"; nothing was changed")
	case err != nil:
		fmt.Fprintf(stderr, "a2ad: %v; nothing was changed\n", err)
		return 1
	}
	sizes := fmt.Sprintf("%d -> %d bytes (%s)", res.Before, res.After, Change(res.Before, res.After))
	if f.out != "" {
		fmt.Fprintf(stdout, "wrote a compacted copy of %s to %s: %s; %s is unchanged\n", f.store, res.Out, sizes, f.store)
	} else {
		fmt.Fprintf(stdout, "compacted %s in place: %s\n", f.store, sizes)
	}
	fmt.Fprintf(stdout, "pages: %d -> %d bytes (%s); the rest of the original was space allocated ahead, which a2ad allocates again (up to 16 MiB) as it writes\n",
		res.BeforeData, res.After, Change(res.BeforeData, res.After))
	if f.out == "" {
		fmt.Fprintf(stdout, "kept the original as %s: delete it once a2ad runs well on the compacted file\n", res.Original)
	}
	if n := dirBytes(f.store + ".wal"); n > 0 && f.out == "" {
		fmt.Fprintf(stdout, "left %s.wal as it is: %d MiB of write-ahead log segments, allocated ahead and reused, holding nothing the file does not\n", f.store, (n+1<<20-1)>>20)
	}
	return 0
}

// dirBytes is the size of the files in dir; 0 if it cannot be read.
func dirBytes(dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n
}

// Change says how a size changed, as the tools print it.
func Change(before, after int64) string {
	switch {
	case after < before:
		return fmt.Sprintf("%d%% smaller", (before-after)*100/before)
	case after > before:
		return fmt.Sprintf("%d%% larger", (after-before)*100/before)
	}
	return "the same size"
}

func runStoreCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newStoreFlags("check", stderr)
	f.fs.StringVar(&f.store, "store", "", "store file to check (no server may hold it), or a PostgreSQL database's postgres:// URL")
	if code := f.parse(args, stderr); code >= 0 {
		return code
	}
	if f.store == "" {
		return cli.UsageError(stderr, "store check: give the store file with --store")
	}
	k, target := stores.Of(f.store)
	if !k.File {
		return checkDatabase(ctx, k, target, stores.Name(f.store), stdout, stderr)
	}
	f.store = target
	r, err := boltstore.Check(f.store, f.lockTimeout)
	switch {
	case errors.Is(err, boltstore.ErrLocked):
		fmt.Fprintf(stderr, "a2ad: the store %s is in use by a running a2ad: check a copy instead (a2ad store backup --server URL --out FILE copies it and checks the copy)\n", f.store)
		return 1
	case errors.Is(err, boltstore.ErrLog):
		return logDamaged(stderr, err, f.store)
	case errors.Is(err, boltstore.ErrDamaged):
		return Damaged(stderr, err, "", "restore the last backup")
	case err != nil:
		fmt.Fprintln(stderr, "a2ad: store check:", err)
		return 1
	}
	return printReport(stdout, stderr, f.store, r)
}

// printReport prints the summary of r on stdout and each problem on its
// own line on stderr, and returns the exit code: 0 when r is clean.
func printReport(stdout, stderr io.Writer, path string, r *boltstore.Report) int {
	fmt.Fprintf(stdout, "checked %s: schema %s, %d tasks\n", path, strconv.Quote(r.Schema), r.Tasks)
	for _, b := range r.Buckets {
		fmt.Fprintf(stdout, "  %-8s %d keys\n", b.Name, b.Keys)
	}
	if r.Clean() {
		fmt.Fprintln(stdout, "no problems found")
		return 0
	}
	for _, p := range r.Problems {
		fmt.Fprintln(stderr, p)
	}
	if r.Omitted > 0 {
		fmt.Fprintf(stderr, "a2ad: %d problem(s) in %s (the first %d shown)\n", len(r.Problems)+r.Omitted, path, len(r.Problems))
	} else {
		fmt.Fprintf(stderr, "a2ad: %d problem(s) in %s\n", len(r.Problems), path)
	}
	return 1
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

func runStoreRepair(args []string, stdout, stderr io.Writer) int {
	f := newStoreFlags("repair", stderr)
	f.fs.StringVar(&f.store, "store", "", "store file whose write-ahead log to apply; no server may hold it")
	accept := f.fs.Bool("accept-loss", false, "apply a damaged log up to the damage (keeping the damaged segments aside), or go on without a missing log: the writes the first run names are lost")
	if code := f.parse(args, stderr); code >= 0 {
		return code
	}
	switch {
	case f.store == "":
		return cli.UsageError(stderr, "store repair: give the store file with --store")
	}
	if code := f.notAFile("store repair", stderr); code >= 0 {
		return code
	}
	res, err := boltstore.Repair(f.store, boltstore.RepairOptions{AcceptLoss: *accept, LockTimeout: f.lockTimeout})
	var le *boltstore.LogError
	switch {
	case errors.Is(err, boltstore.ErrLocked):
		fmt.Fprintf(stderr, "a2ad: the store %s is in use by a running a2ad: stop it first (repair writes the file offline)\n", f.store)
		return 1
	case errors.As(err, &le):
		fmt.Fprintf(stderr, "a2ad: %v; nothing was changed: to accept that loss, run a2ad store repair --store %s --accept-loss\n", le, f.store)
		return 1
	case errors.Is(err, boltstore.ErrDamaged):
		return Damaged(stderr, err, "", RestoreAdvice(f.store)+"; nothing was changed")
	case err != nil:
		fmt.Fprintf(stderr, "a2ad: store repair: %v; nothing was changed\n", err)
		return 1
	}
	printRepair(stdout, f.store, res)
	r, err := boltstore.Check(f.store, f.lockTimeout)
	if err != nil {
		fmt.Fprintln(stderr, "a2ad: store check after the repair:", err)
		return 1
	}
	return printReport(stdout, stderr, f.store, r)
}

// printRepair says what Repair did to the store at path.
func printRepair(stdout io.Writer, path string, res *boltstore.RepairResult) {
	fmt.Fprintf(stdout, "repaired %s: it holds the write-ahead log to record %d (it held %d)\n", path, res.Applied, res.Before)
	for _, op := range res.Skipped {
		fmt.Fprintf(stdout, "left out %v: bbolt refuses it; the other ops of the record were applied\n", op)
	}
	if n := res.SkippedCount - len(res.Skipped); n > 0 {
		fmt.Fprintf(stdout, "left out %d more such ops\n", n)
	}
	if res.SkippedCount > 0 {
		fmt.Fprintln(stdout, "each caller's stored bytes are counted again when a2ad next opens the store")
	}
	if d := res.Damage; d != nil {
		fmt.Fprintf(stdout, "lost: record %d (segment %s, byte %d: %s) and the %d after it (%d to %d), writing %d tasks: %s\n",
			d.Record, d.Segment, d.Offset, d.What, d.Lost, d.First, d.Last, d.TaskCount, strings.Join(d.Tasks, " "))
		fmt.Fprintf(stdout, "kept the damaged segments in %s\n", res.Aside)
	}
	if res.Missing {
		fmt.Fprintln(stdout, "lost: whatever the missing write-ahead log held after that record; a new, empty log was made")
	}
}
