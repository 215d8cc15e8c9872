//go:build unix

package main

import (
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// notifySocket is a fake systemd: a unixgram socket in a temporary
// directory, whose datagrams arrive on got.
type notifySocket struct {
	path string
	got  chan string
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	ns := &notifySocket{path: path, got: make(chan string, 1024)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return // closed at the end of the test
			}
			select {
			case ns.got <- string(buf[:n]):
			default:
			}
		}
	}()
	t.Cleanup(func() { _ = conn.Close(); <-done })
	return ns
}

// next returns the next datagram that is not a watchdog keep-alive, and
// counts the keep-alives before it.
func (ns *notifySocket) next(t *testing.T) (msg string, keepAlives int) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m := <-ns.got:
			if m == "WATCHDOG=1" {
				keepAlives++
				continue
			}
			return m, keepAlives
		case <-timeout:
			t.Fatalf("no notification in 20 s (%d keep-alives)", keepAlives)
		}
	}
}

// TestSystemdNotify runs the real binary under a fake NOTIFY_SOCKET with
// a watchdog: READY=1 once it serves, WATCHDOG=1 every half of
// WATCHDOG_USEC, RELOADING=1 (with MONOTONIC_USEC) then READY=1 around a
// SIGHUP reload, STOPPING=1 on SIGTERM. The card's version is a2ad
// version's, from the build.
func TestSystemdNotify(t *testing.T) {
	skipShort(t, "builds and runs the real binary")
	ns := listenNotify(t)
	t.Setenv("NOTIFY_SOCKET", ns.path)
	t.Setenv("WATCHDOG_USEC", "200000") // 200 ms: a keep-alive every 100 ms
	p := startBinary(t, exampleCatalog, filepath.Join(t.TempDir(), "a2ad.db"))

	if msg, _ := ns.next(t); msg != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", msg)
	}
	time.Sleep(450 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	msg, keepAlives := ns.next(t)
	if keepAlives < 3 {
		t.Errorf("%d watchdog keep-alives in 450 ms, want at least 3", keepAlives)
	}
	if !regexp.MustCompile(`^RELOADING=1\nMONOTONIC_USEC=[1-9][0-9]*\n$`).MatchString(msg) {
		t.Fatalf("on SIGHUP: %q, want RELOADING=1 and MONOTONIC_USEC", msg)
	}
	if msg, _ := ns.next(t); msg != "READY=1" {
		t.Fatalf("after the reload: %q, want READY=1", msg)
	}

	// The version: the card's is a2ad version's, and a binary stamped
	// from a git checkout names its revision.
	out, err := exec.Command(binary(t), "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "a2ad ")
	if card := getCard(t, p.base); card["version"] != v {
		t.Errorf("card version %v, a2ad version %q", card["version"], v)
	}
	if info, err := exec.Command("go", "version", "-m", binary(t)).Output(); err == nil {
		// At a tagged commit the module version is the tag, which names
		// the revision as well as a hash does.
		tag := regexp.MustCompile(`(?m)^\s*mod\s+\S+\s+(v\d+\.\d+\.\d+(\+dirty)?)\s`).FindSubmatch(info)
		if m := regexp.MustCompile(`vcs\.revision=([0-9a-f]{12})`).FindSubmatch(info); m != nil && !strings.Contains(v, string(m[1])) &&
			(tag == nil || v != string(tag[1])) {
			t.Errorf("a2ad version %q does not name the revision %s it was built from (nor is it the tag it was built at)", v, m[1])
		}
	}

	if err := p.terminate(t, 30*time.Second); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if msg, _ := ns.next(t); msg != "STOPPING=1" {
		t.Fatalf("on SIGTERM: %q, want STOPPING=1", msg)
	}
}
