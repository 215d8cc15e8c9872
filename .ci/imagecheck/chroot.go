package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// serveInChroot runs the image as a container runtime would, short of
// namespaces: `a2ad serve` in a chroot of the image's file system, as the
// image's user, in its working directory, with its environment only (so
// the catalogue and the store come from the image's A2AD_ settings). The
// card must answer and a call must complete, which writes the store into
// /data as that user; SIGTERM must end it with exit 0. It needs root (to
// chroot and change user); otherwise it says so and checks nothing.
func serveInChroot(img *image, rootfs string) []string {
	if os.Geteuid() != 0 {
		fmt.Println("imagecheck: not root: the run in a chroot as the image's user is left out")
		return nil
	}
	c := img.config.Config
	uid, gid, _ := strings.Cut(c.User, ":")
	u, _ := strconv.ParseUint(uid, 10, 32)
	g, err := strconv.ParseUint(gid, 10, 32)
	if err != nil {
		g = u
	}
	cmd := exec.Command(c.Entrypoint[0], "serve", "--listen", "127.0.0.1:0", "--admin-listen", "")
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: rootfs, Credential: &syscall.Credential{Uid: uint32(u), Gid: uint32(g)}}
	cmd.Dir, cmd.Env = c.WorkingDir, c.Env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return []string{err.Error()}
	}
	if err := cmd.Start(); err != nil {
		return []string{fmt.Sprintf("serve in a chroot as %s: %v", c.User, err)}
	}
	defer func() { _ = cmd.Process.Kill() }()
	base, logs := waitServing(stderr)
	if base == "" {
		return []string{"serve in a chroot as " + c.User + ": no \"a2ad serving\" line in 20 s; it logged:\n" + logs}
	}
	var problems []string
	if err := call(base); err != nil {
		problems = append(problems, "serve in a chroot: "+err.Error())
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		problems = append(problems, fmt.Sprintf("serve in a chroot: exit after SIGTERM: %v", err))
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(rootfs, "data", "a2ad.db"), &st); err != nil || st.Uid != uint32(u) {
		problems = append(problems, fmt.Sprintf("/data/a2ad.db: want the store, owned by %d (%v)", u, err))
	}
	return problems
}

// waitServing reads the log until its "a2ad serving" line and returns the
// base URL it names, and what was logged; "" after 20 s.
func waitServing(stderr io.Reader) (base, logs string) {
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var b strings.Builder
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return "", b.String()
			}
			b.WriteString(line + "\n")
			var e struct {
				Message string `json:"message"`
				BaseURL string `json:"base_url"`
			}
			if json.Unmarshal([]byte(line), &e) == nil && e.Message == "a2ad serving" {
				go func() { // keep the pipe drained
					for range lines {
					}
				}()
				return e.BaseURL, b.String()
			}
		case <-deadline:
			return "", b.String()
		}
	}
}

// call reads the card at base and has demo::echo answer.
func call(base string) error {
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get(base + "/.well-known/agent-card.json")
	if err != nil {
		return err
	}
	card, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(card), `"demo::echo"`) {
		return fmt.Errorf("card: %d %.200s", resp.StatusCode, card)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"imagecheck","role":"user",` +
		`"parts":[{"kind":"data","data":{"skill":"demo::echo","input":{"text":"hi"}}}]}}}`
	resp, err = hc.Post(base+"/a2a", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(answer), `"state":"completed"`) {
		return fmt.Errorf("message/send demo::echo: %d %.300s", resp.StatusCode, answer)
	}
	return nil
}
