//go:build unix

package sdnotify_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/internal/sdnotify"
)

// listen is a fake systemd: the datagrams sent to NOTIFY_SOCKET.
func listen(t *testing.T) <-chan string {
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	got := make(chan string, 100)
	go func() {
		buf := make([]byte, 512)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(got)
				return
			}
			got <- string(buf[:n])
		}
	}()
	return got
}

func recv(t *testing.T, got <-chan string) string {
	t.Helper()
	select {
	case m := <-got:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no datagram")
		return ""
	}
}

func TestNotifications(t *testing.T) {
	got := listen(t)
	n := sdnotify.New(zerolog.Nop())
	defer n.Close()
	n.Ready()
	n.Reloading()
	n.Stopping()
	if m := recv(t, got); m != "READY=1" {
		t.Errorf("Ready sent %q", m)
	}
	if m := recv(t, got); !strings.HasPrefix(m, "RELOADING=1\nMONOTONIC_USEC=") || !strings.HasSuffix(m, "\n") {
		t.Errorf("Reloading sent %q", m)
	}
	if m := recv(t, got); m != "STOPPING=1" {
		t.Errorf("Stopping sent %q", m)
	}
}

// TestWatchdogIsThisProcesssOnly: WATCHDOG_PID naming another process
// keeps no watchdog; naming this one, keep-alives come until Close.
func TestWatchdogIsThisProcesssOnly(t *testing.T) {
	got := listen(t)
	t.Setenv("WATCHDOG_USEC", "20000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()+1))
	other := sdnotify.New(zerolog.Nop())
	other.StartWatchdog()
	time.Sleep(50 * time.Millisecond)
	other.Close()
	select {
	case m := <-got:
		t.Fatalf("another process's watchdog: got %q", m)
	default:
	}

	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	n := sdnotify.New(zerolog.Nop())
	n.StartWatchdog()
	for range 3 {
		if m := recv(t, got); m != "WATCHDOG=1" {
			t.Fatalf("keep-alive %q", m)
		}
	}
	n.Close()
	n.Close() // twice is fine
	time.Sleep(30 * time.Millisecond)
	for len(got) > 0 {
		<-got // sent before Close returned
	}
	time.Sleep(50 * time.Millisecond)
	if len(got) != 0 {
		t.Fatal("keep-alives after Close")
	}
}

// TestNilNotifierDoesNothing: a Main without a service manager to tell
// has a nil Notifier.
func TestNilNotifierDoesNothing(t *testing.T) {
	var n *sdnotify.Notifier
	n.Ready()
	n.Reloading()
	n.Stopping()
	n.StartWatchdog()
	n.Close()
}
