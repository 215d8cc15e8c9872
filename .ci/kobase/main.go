// Command kobase writes the base image of a2ad's container image into an
// OCI image layout, where ko finds it without a registry: ko looks a base
// named by digest up in $KOCACHE/img before it pulls anything, and this
// machine, CI's and many build hosts reach no container registry.
//
// The base is a static one, as distroless "static:nonroot" is, made here
// from scratch: no shell, no package manager, no libc (a2ad is built with
// CGO_ENABLED=0). It holds /etc/passwd and /etc/group with root and the
// user nonroot (65532), /etc/nsswitch.conf, the CA certificates of the
// build host (for webhooks and backends over https), /tmp, and /data, the
// store's directory, owned by nonroot. Its config runs as 65532:65532 in
// /data, with A2AD_CATALOG and A2AD_STORE pointing at the example
// catalogue ko ships (kodata) and at /data. One image per platform, in one
// index.
//
// Run it from the module root as `go run ./.ci/kobase -layout DIR`; it
// prints the index's digest, the reference to give ko
// (KO_DEFAULTBASEIMAGE=a2ad.local/base@<digest>). It lives under .ci so
// that ./... does not build it.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
	nonroot       = 65532
)

type descriptor struct {
	MediaType string            `json:"mediaType"`
	Digest    string            `json:"digest"`
	Size      int64             `json:"size"`
	Platform  *platform         `json:"platform,omitempty"`
	Annots    map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

func main() {
	layout := flag.String("layout", "", "OCI image layout directory to add the base to (created if missing)")
	caFile := flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "PEM bundle of the CAs the image trusts")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch of the images in the index")
	flag.Parse()
	if *layout == "" {
		fmt.Fprintln(os.Stderr, "kobase: -layout DIR is required")
		os.Exit(2)
	}
	digest, err := write(*layout, *caFile, strings.Split(*platforms, ","))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kobase:", err)
		os.Exit(1)
	}
	fmt.Println(digest)
}

// write adds the base index to the layout and returns its digest.
func write(dir, caFile string, platforms []string) (string, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return "", fmt.Errorf("ca-certificates: %w (install Debian's ca-certificates, or give -ca-certificates)", err)
	}
	tarBytes, err := rootfs(ca)
	if err != nil {
		return "", err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if _, err := zw.Write(tarBytes); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return "", err
	}
	layer, err := putBlob(dir, mediaLayer, gz.Bytes())
	if err != nil {
		return "", err
	}
	idx := index{SchemaVersion: 2, MediaType: mediaIndex}
	for _, p := range platforms {
		osName, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok {
			return "", fmt.Errorf("platform %q: want os/arch", p)
		}
		m, err := putImage(dir, platform{Architecture: arch, OS: osName}, layer, digestOf(tarBytes))
		if err != nil {
			return "", err
		}
		idx.Manifests = append(idx.Manifests, m)
	}
	top, err := putJSON(dir, mediaIndex, idx)
	if err != nil {
		return "", err
	}
	// ko's cache finds each image of the index by its digest in the
	// layout's own index.json: list them beside the index.
	return top.Digest, addToLayout(dir, append(idx.Manifests, top)...)
}

// putImage writes the config and manifest of the base for p.
func putImage(dir string, p platform, layer descriptor, diffID string) (descriptor, error) {
	epoch := time.Unix(0, 0).UTC()
	cfg := map[string]any{
		"architecture": p.Architecture,
		"os":           p.OS,
		"created":      epoch,
		"config": map[string]any{
			"User":       fmt.Sprintf("%d:%d", nonroot, nonroot),
			"WorkingDir": "/data",
			"Env": []string{
				"PATH=/usr/local/bin:/usr/bin:/bin",
				"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
				"A2AD_CATALOG=/var/run/ko/catalog.yaml",
				"A2AD_STORE=/data/a2ad.db",
			},
			"Volumes": map[string]any{"/data": map[string]any{}},
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		"history": []map[string]any{{"created": epoch, "created_by": "a2ad .ci/kobase: static, nonroot, CA certificates, /data"}},
	}
	c, err := putJSON(dir, mediaConfig, cfg)
	if err != nil {
		return descriptor{}, err
	}
	m, err := putJSON(dir, mediaManifest, map[string]any{
		"schemaVersion": 2, "mediaType": mediaManifest, "config": c, "layers": []descriptor{layer},
	})
	m.Platform = &p
	return m, err
}

// rootfs is the base's one layer, as a tar.
func rootfs(ca []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: epoch})
	}
	file := func(name string, mode int64, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body)), ModTime: epoch}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	err := errors.Join(
		dir("etc", 0o755, 0),
		file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")),
		file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")),
		file("etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n")),
		dir("etc/ssl", 0o755, 0),
		dir("etc/ssl/certs", 0o755, 0),
		file("etc/ssl/certs/ca-certificates.crt", 0o644, ca),
		dir("home", 0o755, 0),
		dir("home/nonroot", 0o700, nonroot),
		dir("root", 0o700, 0),
		dir("tmp", 0o1777, 0),
		dir("data", 0o700, nonroot),
		tw.Close(),
	)
	return buf.Bytes(), err
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// putBlob writes b as a blob of the layout.
func putBlob(dir, mediaType string, b []byte) (descriptor, error) {
	d := descriptor{MediaType: mediaType, Digest: digestOf(b), Size: int64(len(b))}
	path := filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(d.Digest, "sha256:"))
	return d, os.WriteFile(path, b, 0o644)
}

func putJSON(dir, mediaType string, v any) (descriptor, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return descriptor{}, err
	}
	return putBlob(dir, mediaType, b)
}

// addToLayout lists ds in the layout's index.json, writing the layout's
// files if they are missing; a layout ko already uses as its cache keeps
// what it holds.
func addToLayout(dir string, ds ...descriptor) error {
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		return err
	}
	idx := index{SchemaVersion: 2, MediaType: mediaIndex, Manifests: []descriptor{}}
	path := filepath.Join(dir, "index.json")
	switch b, err := os.ReadFile(path); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(b, &idx); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	for _, d := range ds {
		if !slices.ContainsFunc(idx.Manifests, func(m descriptor) bool { return m.Digest == d.Digest }) {
			idx.Manifests = append(idx.Manifests, d)
		}
	}
	b, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
