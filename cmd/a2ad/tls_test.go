package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/internal/testkit"
)

// TestReloadReportsTLS: a reload reads the certificate again and says so
// in its report; one with a broken key keeps the certificate in force.
func TestReloadReportsTLS(t *testing.T) {
	ca := testkit.NewCA(t, "a2ad test CA")
	first := ca.Server(t, "first")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	copyTo := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		putFile(t, to, string(b))
	}
	copyTo(first.CertFile, certFile)
	copyTo(first.KeyFile, keyFile)
	cfg := testConfig(filepath.Join(dir, "a2ad.db"))
	cfg.TLSCert, cfg.TLSKey = certFile, keyFile
	m := openMain(t, &Main{Config: cfg, Logger: zerolog.Nop()})
	closeAtEnd(t, m)
	if !strings.HasPrefix(m.BaseURL(), "https://127.0.0.1:") {
		t.Fatalf("base URL %q, want https://", m.BaseURL())
	}

	second := ca.Server(t, "second")
	copyTo(second.CertFile, certFile)
	copyTo(second.KeyFile, keyFile)
	r, err := m.Reload()
	if err != nil || r.TLS == nil || !r.TLS.Reloaded || len(r.TLS.Problems) != 0 ||
		r.TLS.NotAfter != second.Cert.NotAfter.UTC().Format(time.RFC3339) {
		t.Fatalf("Reload() = %+v, %v; want the TLS part reloaded", r.TLS, err)
	}
	if cn := m.tls.Leaf().Subject.CommonName; cn != "second" {
		t.Fatalf("certificate in force after the reload: %q", cn)
	}

	putFile(t, keyFile, "not a key")
	r, err = m.Reload()
	want := "tls-cert " + certFile + ", tls-key " + keyFile + ": tls: failed to find any PEM data in key input"
	if err == nil || r.TLS.Reloaded || !slices.Equal(r.TLS.Problems, []string{want}) || err.Error() != "tls: "+want {
		t.Fatalf("Reload() with a broken key = %+v, %v; want problem %q", r.TLS, err, want)
	}
	if cn := m.tls.Leaf().Subject.CommonName; cn != "second" {
		t.Fatalf("certificate in force after a failed reload: %q", cn)
	}
}

// TestServeRefusesBadCertificate: a certificate that does not load stops
// serve before it listens, naming the file, with exit code 1.
func TestServeRefusesBadCertificate(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key.pem")
	putFile(t, key, "not a key")
	ca := testkit.NewCA(t, "a2ad test CA")
	cert := ca.Server(t, "server").CertFile
	for _, tt := range []struct {
		cert, key, want string
	}{
		{filepath.Join(dir, "missing.pem"), key, "a2ad: tls-cert: open " + filepath.Join(dir, "missing.pem") + ": no such file or directory\n"},
		{cert, key, "a2ad: tls-cert " + cert + ", tls-key " + key + ": tls: failed to find any PEM data in key input\n"},
	} {
		cfg := testConfig(filepath.Join(dir, "a2ad.db"))
		cfg.TLSCert, cfg.TLSKey = tt.cert, tt.key
		var stderr strings.Builder
		if code := serve(t.Context(), cfg, &stderr); code != 1 || !strings.HasSuffix(stderr.String(), tt.want) {
			t.Errorf("serve with --tls-cert %s --tls-key %s: exit %d, stderr %q; want 1 and %q", tt.cert, tt.key, code, stderr.String(), tt.want)
		}
	}
}
