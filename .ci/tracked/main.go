// Command tracked fails when git tracks a build output: a compiled binary
// (ELF, Mach-O, PE, or a Go archive) anywhere, or any file over 1 MB outside
// a testdata/ directory. Two test binaries (58 MB) were once committed at the
// root by accident (issue 27); history keeps them, this keeps them out of the
// tree. It lives under .ci so that ./... does not see it; run it as
// `go run ./.ci/tracked` from the module root.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

const maxSize = 1 << 20

// magics are the first bytes of compiled outputs.
var magics = []struct {
	kind  string
	bytes []byte
}{
	{"an ELF binary", []byte("\x7fELF")},
	{"a Mach-O binary", []byte{0xcf, 0xfa, 0xed, 0xfe}},
	{"a Mach-O binary", []byte{0xce, 0xfa, 0xed, 0xfe}},
	{"a PE binary", []byte("MZ")},
	{"a Go or ar archive", []byte("!<arch>\n")},
}

func main() {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracked: git ls-files:", err)
		os.Exit(2)
	}
	var problems []string
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		if p := check(name); p != "" {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		fmt.Println("build outputs or large files tracked in git (git rm --cached them and ignore them):")
		for _, p := range problems {
			fmt.Println("  " + p)
		}
		os.Exit(1)
	}
}

// check names the problem with one tracked file, or returns "".
func check(name string) string {
	f, err := os.Open(name)
	if err != nil {
		return "" // deleted in the work tree: nothing to build from
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return ""
	}
	head := make([]byte, 8)
	n, _ := io.ReadFull(f, head)
	for _, m := range magics {
		if bytes.HasPrefix(head[:n], m.bytes) {
			return fmt.Sprintf("%s: %s", name, m.kind)
		}
	}
	if st.Size() > maxSize && !inTestdata(name) {
		return fmt.Sprintf("%s: %d bytes, over 1 MB outside testdata/", name, st.Size())
	}
	return ""
}

func inTestdata(name string) bool {
	return strings.HasPrefix(name, "testdata/") || strings.Contains(name, "/testdata/")
}
