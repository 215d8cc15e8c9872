//go:build linux

package pgtest

import (
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Private is a PostgreSQL server of one test's own, for tests that stop
// and start the server itself (the shared one is never stopped): its data
// directory and socket are in a temporary directory, it listens on a free
// port of 127.0.0.1 and trusts every local connection.
type Private struct {
	tb   testing.TB
	bin  string // the directory of initdb and pg_ctl
	dir  string // the temporary directory: data/, the socket, the log
	port int
	as   *syscall.Credential // the postgres user's, when the test runs as root
}

// StartPrivate initializes and starts a new server for tb, and stops it
// and removes its files when tb ends. It uses the newest initdb and pg_ctl
// under /usr/lib/postgresql/*/bin; without them tb skips (fails, under
// A2AD_REQUIRE_POSTGRES=1). initdb refuses to run as root: as root, the
// server runs as the postgres user.
func StartPrivate(tb testing.TB) *Private {
	tb.Helper()
	bin := serverBin()
	if bin == "" {
		skipOrFail(tb, "no PostgreSQL server programs (initdb, pg_ctl) under /usr/lib/postgresql/*/bin")
	}
	// Not tb.TempDir(): its parent is the test's own (mode 0700), which
	// the postgres user could not enter.
	dir, err := os.MkdirTemp("", "a2ad-pg")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Private{tb: tb, bin: bin, dir: dir, port: freePort(tb)}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		p.as = postgresUser(tb)
		if err := os.Chown(dir, int(p.as.Uid), int(p.as.Gid)); err != nil {
			tb.Fatal(err)
		}
	}
	p.run("initdb", "-D", p.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	p.Start()
	tb.Cleanup(func() { _ = p.ctl("stop", "-m", "immediate") })
	return p
}

// DSN is the URL of the server's database postgres.
func (p *Private) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
}

// Start starts the server and waits until it accepts connections.
func (p *Private) Start() {
	p.tb.Helper()
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off", p.port, p.dir)
	if err := p.ctl("start", "-w", "-t", "30", "-l", filepath.Join(p.dir, "server.log"), "-o", opts); err != nil {
		p.tb.Fatal(err)
	}
}

// Stop stops the server as `pg_ctl stop -m fast` does: it ends every
// session at once, rolling back their transactions, and waits until the
// server has exited.
func (p *Private) Stop() {
	p.tb.Helper()
	if err := p.ctl("stop", "-w", "-m", "fast"); err != nil {
		p.tb.Fatal(err)
	}
}

func (p *Private) data() string { return filepath.Join(p.dir, "data") }

// ctl runs pg_ctl with args on the data directory.
func (p *Private) ctl(args ...string) error {
	return p.command("pg_ctl", append([]string{"-D", p.data()}, args...)...)
}

// run runs program with args, failing tb if it fails.
func (p *Private) run(program string, args ...string) {
	p.tb.Helper()
	if err := p.command(program, args...); err != nil {
		p.tb.Fatal(err)
	}
}

// command runs program of the server's with args, as the postgres user
// when the test runs as root, and returns its error with its output.
func (p *Private) command(program string, args ...string) error {
	cmd := osexec.Command(filepath.Join(p.bin, program), args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if p.as != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.as}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", program, strings.Join(args, " "), err, out)
	}
	return nil
}

// serverBin is the newest /usr/lib/postgresql/<version>/bin that holds
// initdb and pg_ctl, or "".
func serverBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int {
		switch va, vb := version(a), version(b); {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return 0
	})
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "pg_ctl")) {
			return d
		}
	}
	return ""
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// postgresUser is the credential of the postgres user.
func postgresUser(tb testing.TB) *syscall.Credential {
	tb.Helper()
	u, err := user.Lookup("postgres")
	if err != nil {
		skipOrFail(tb, "the test runs as root and there is no postgres user to run a PostgreSQL server as")
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		tb.Fatalf("the postgres user's ids %q, %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// freePort is a TCP port of 127.0.0.1 nothing listens on, as of now.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
