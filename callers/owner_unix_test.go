//go:build unix

package callers_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/internal/testkit"
)

// TestKeysFileKeepsModeAndOwner: the systemd unit installs the keys file
// 0640 root:a2ad so that the server, as user a2ad, reads it; a key added
// or revoked by root must leave it so, or the next reload cannot read the
// file and a revoked key stays in force. A new file is 0600.
func TestKeysFileKeepsModeAndOwner(t *testing.T) {
	now := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	fresh := filepath.Join(t.TempDir(), "keys.yaml")
	if _, err := callers.AppendKey(fresh, "acme", []string{"partner"}, now); err != nil {
		t.Fatal(err)
	}
	if mode := testkit.Stat(t, fresh).Mode().Perm(); mode != 0o600 {
		t.Errorf("new keys file: mode %v, want 0600", mode)
	}

	// A group other than the file's (the group's change needs root, or
	// membership of it): the test's own supplementary group, else nogroup as root.
	gid := -1
	if groups, _ := os.Getgroups(); len(groups) > 0 && groups[len(groups)-1] != os.Getegid() {
		gid = groups[len(groups)-1]
	} else if os.Geteuid() == 0 {
		gid = 65534
	}
	if err := os.Chmod(fresh, 0o640); err != nil {
		t.Fatal(err)
	}
	if gid >= 0 {
		if err := os.Chown(fresh, -1, gid); err != nil {
			t.Fatal(err)
		}
	}
	want := testkit.Stat(t, fresh).Sys().(*syscall.Stat_t)
	if _, err := callers.AppendKey(fresh, "acme", nil, now); err != nil {
		t.Fatal(err)
	}
	if _, err := callers.RevokeKeys(fresh, "acme", "", now); err != nil {
		t.Fatal(err)
	}
	fi := testkit.Stat(t, fresh)
	got := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o640 || got.Uid != want.Uid || got.Gid != want.Gid {
		t.Errorf("after AppendKey and RevokeKeys: mode %v, owner %d:%d; want 0640, %d:%d",
			fi.Mode().Perm(), got.Uid, got.Gid, want.Uid, want.Gid)
	}
	if gid < 0 {
		t.Log("no second group to give the file: only the mode was checked against a change")
	}
}
