// Command imagecheck checks the container image tarball that .ci/image
// builds (ko build --tarball, the `docker save` format) without a Docker
// daemon: it reads the image's config and layers and checks that the
// image runs /ko-app/a2ad as a non-root user, holds the example
// catalogue at $KO_DATA_PATH and /data owned by that user, and that the
// binary in it, run here, prints the version stamped into it and accepts
// the catalogue it ships. Run as root, it also serves a call from the
// image's file system as the image's user (see serveInChroot). It lives under .ci so that ./... does not
// build it; run it as `go run ./.ci/imagecheck -version V IMAGE.tar`.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// image is what the check reads of the tarball.
type image struct {
	tags   []string
	config struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
		Config       struct {
			User       string   `json:"User"`
			Entrypoint []string `json:"Entrypoint"`
			Env        []string `json:"Env"`
			WorkingDir string   `json:"WorkingDir"`
		} `json:"config"`
	}
	files map[string]*tar.Header // the merged file system, by path without a leading slash
}

func main() {
	version := flag.String("version", "", "the version the binary must print")
	tag := flag.String("tag", "a2ad:latest", "the tag the image must carry")
	flag.Parse()
	if flag.NArg() != 1 || *version == "" {
		fmt.Fprintln(os.Stderr, "usage: imagecheck -version V [-tag T] IMAGE.tar")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "imagecheck")
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagecheck:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	// The image's root: its user must be able to enter it.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "imagecheck:", err)
		os.Exit(1)
	}
	img, err := read(flag.Arg(0), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagecheck:", err)
		os.Exit(1)
	}
	problems := img.check(*tag)
	if len(problems) == 0 {
		problems = run(img, dir, *version)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "imagecheck:", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	c := img.config.Config
	fmt.Printf("ok: %s %s/%s, user %s, entrypoint %s, %d files, /data owned by %d\n", strings.Join(img.tags, ","),
		img.config.OS, img.config.Architecture, c.User, strings.Join(c.Entrypoint, " "), len(img.files), img.files["data"].Uid)
}

// read reads the tarball at path, extracting the binary and the kodata
// into dir.
func read(path, dir string) (*image, error) {
	members, err := untar(path)
	if err != nil {
		return nil, err
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(members["manifest.json"], &manifest); err != nil {
		return nil, fmt.Errorf("manifest.json: %v", err)
	}
	if len(manifest) != 1 {
		return nil, fmt.Errorf("manifest.json: %d images, want 1", len(manifest))
	}
	img := &image{tags: manifest[0].RepoTags, files: map[string]*tar.Header{}}
	if err := json.Unmarshal(members[manifest[0].Config], &img.config); err != nil {
		return nil, fmt.Errorf("config %s: %v", manifest[0].Config, err)
	}
	for _, l := range manifest[0].Layers {
		if err := img.addLayer(members[l], dir); err != nil {
			return nil, fmt.Errorf("layer %s: %v", l, err)
		}
	}
	return img, nil
}

// untar reads the members of the tarball at path into memory.
func untar(path string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if out[h.Name], err = io.ReadAll(tr); err != nil {
			return nil, err
		}
	}
}

// addLayer adds a gzipped layer's files to img.files and extracts them
// under root, with their owners when this runs as root.
func (img *image) addLayer(gz []byte, root string) error {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := strings.Trim(filepath.Clean("/"+h.Name), "/")
		img.files[name] = h
		if err := extract(tr, h, filepath.Join(root, name)); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
	}
}

// extract writes the entry h, whose content tr holds, at dst.
func extract(tr io.Reader, h *tar.Header, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
	case tar.TypeReg:
		f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if err := errors.Join(err, f.Close()); err != nil {
			return err
		}
	case tar.TypeSymlink:
		_ = os.Remove(dst)
		return os.Symlink(h.Linkname, dst)
	default:
		return nil
	}
	if os.Geteuid() == 0 {
		if err := os.Lchown(dst, h.Uid, h.Gid); err != nil {
			return err
		}
	}
	return os.Chmod(dst, h.FileInfo().Mode())
}

// check lists what is wrong with the image's config and files.
func (img *image) check(tag string) []string {
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	c := img.config.Config
	if !slices.Contains(img.tags, tag) {
		fail("tags %v, want %s", img.tags, tag)
	}
	if img.config.OS != "linux" {
		fail("os %q, want linux", img.config.OS)
	}
	uid, _, _ := strings.Cut(c.User, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		fail("user %q: want a numeric user other than root (0), so that no name lookup decides it", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/ko-app/a2ad"}) {
		fail("entrypoint %q, want [/ko-app/a2ad]", c.Entrypoint)
	}
	for _, want := range []string{"KO_DATA_PATH=/var/run/ko", "A2AD_CATALOG=/var/run/ko/catalog.yaml", "A2AD_STORE=/data/a2ad.db"} {
		if !slices.Contains(c.Env, want) {
			fail("env %q lacks %s", c.Env, want)
		}
	}
	if h := img.files["ko-app/a2ad"]; h == nil || h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 {
		fail("/ko-app/a2ad: want an executable file")
	}
	for _, f := range []string{"var/run/ko/catalog.yaml", "var/run/ko/bin/wordcount.sh", "var/run/ko/schemas/quote.json", "etc/ssl/certs/ca-certificates.crt", "etc/passwd"} {
		if h := img.files[f]; h == nil || h.Typeflag != tar.TypeReg || h.Size == 0 {
			fail("/%s: want a file that is not empty", f)
		}
	}
	if h := img.files["data"]; h == nil || h.Typeflag != tar.TypeDir || strconv.Itoa(h.Uid) != uid {
		fail("/data: want a directory owned by the image's user %s", uid)
	}
	return problems
}

// run runs the image's binary here, if the image is of this machine's
// architecture: it must print version, and accept the catalogue it ships.
func run(img *image, dir, version string) []string {
	if img.config.Architecture != runtime.GOARCH || runtime.GOOS != "linux" {
		return []string{fmt.Sprintf("image for %s/%s: cannot run it on %s/%s", img.config.OS, img.config.Architecture, runtime.GOOS, runtime.GOARCH)}
	}
	bin := filepath.Join(dir, "ko-app", "a2ad")
	var problems []string
	out, err := exec.Command(bin, "version").CombinedOutput()
	if got := strings.TrimSpace(string(out)); err != nil || !strings.Contains(got, version) {
		problems = append(problems, fmt.Sprintf("a2ad version: %q (%v), want %s", got, err, version))
	}
	catalog := filepath.Join(dir, "var", "run", "ko", "catalog.yaml")
	if out, err := exec.Command(bin, "validate", catalog).CombinedOutput(); err != nil {
		problems = append(problems, fmt.Sprintf("a2ad validate of the shipped catalogue: %v\n%s", err, out))
	}
	return append(problems, serveInChroot(img, dir)...)
}
