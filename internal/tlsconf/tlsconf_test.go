package tlsconf_test

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/a2ad/a2ad/internal/tlsconf"
)

// serve accepts TLS connections on a loopback port with cfg, and answers
// each line a client sends with the client certificate's subject (or "-")
// and the line.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				if tc.Handshake() != nil {
					return
				}
				buf := make([]byte, 64)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					cs := tc.ConnectionState()
					subject, ok := tlsconf.ClientSubject(&cs)
					if !ok {
						subject = "-"
					}
					if _, err := c.Write([]byte(subject + " " + string(buf[:n]))); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// echo writes msg on c and returns the answer.
func echo(t *testing.T, c net.Conn, msg string) string {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

func TestReloadSwapsCertificateForNewHandshakes(t *testing.T) {
	ca := testkit.NewCA(t, "test CA")
	first, second := ca.Server(t, "first"), ca.Server(t, "second")
	dir := t.TempDir()
	certFile, keyFile := dir+"/cert.pem", dir+"/key.pem"
	testkit.CopyFile(t, first.CertFile, certFile)
	testkit.CopyFile(t, first.KeyFile, keyFile)

	r, err := tlsconf.Load(tlsconf.Files{Cert: certFile, Key: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, r.Config("a2ad-test"))
	client := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", NextProtos: []string{"a2ad-test"}}

	open, err := tls.Dial("tcp", addr, client)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if cn := open.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "first" {
		t.Fatalf("first handshake saw %q", cn)
	}
	if got := open.ConnectionState().NegotiatedProtocol; got != "a2ad-test" {
		t.Fatalf("ALPN: %q, want a2ad-test", got)
	}

	// A key that does not match the certificate: the reload fails and
	// the first certificate stays.
	testkit.CopyFile(t, second.CertFile, certFile)
	if err := r.Reload(); err == nil || !strings.Contains(err.Error(), "private key does not match public key") {
		t.Fatalf("reload with a mismatched key: %v", err)
	}
	if cn := r.Leaf().Subject.CommonName; cn != "first" {
		t.Fatalf("after a failed reload the leaf is %q", cn)
	}
	testkit.CopyFile(t, second.KeyFile, keyFile)
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}

	// The open connection goes on; a new one sees the new certificate.
	if got := echo(t, open, "ping"); got != "- ping" {
		t.Fatalf("open connection after the reload: %q", got)
	}
	fresh, err := tls.Dial("tcp", addr, client)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if cn := fresh.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "second" {
		t.Fatalf("handshake after the reload saw %q", cn)
	}
}

func TestOldTLSRefused(t *testing.T) {
	ca := testkit.NewCA(t, "test CA")
	srv := ca.Server(t, "server")
	r, err := tlsconf.Load(tlsconf.Files{Cert: srv.CertFile, Key: srv.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, r.Config())
	_, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
	if err == nil || !strings.Contains(err.Error(), "protocol version not supported") {
		t.Fatalf("TLS 1.1 client: %v, want a protocol version alert", err)
	}
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", MaxVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS 1.2 client: %v", err)
	}
	_ = c.Close()
}

func TestClientCertificates(t *testing.T) {
	ca, other := testkit.NewCA(t, "partners CA"), testkit.NewCA(t, "someone else")
	srv := ca.Server(t, "server")
	r, err := tlsconf.Load(tlsconf.Files{Cert: srv.CertFile, Key: srv.KeyFile, ClientCA: ca.PEMFile})
	if err != nil {
		t.Fatal(err)
	}
	if !r.MutualTLS() {
		t.Fatal("MutualTLS is false with a client CA")
	}
	addr := serve(t, r.Config())
	dial := func(certs ...tls.Certificate) (*tls.Conn, error) {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: certs})
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = c.Close() })
		return c, nil
	}

	partner := ca.Client(t, pkix.Name{CommonName: "partner-a", Organization: []string{"Acme"}})
	c, err := dial(partner.TLS)
	if err != nil {
		t.Fatal(err)
	}
	if got := echo(t, c, "hi"); got != "CN=partner-a,O=Acme hi" {
		t.Fatalf("verified client: %q", got)
	}

	// No certificate: let through, with no subject.
	c, err = dial()
	if err != nil {
		t.Fatal(err)
	}
	if got := echo(t, c, "hi"); got != "- hi" {
		t.Fatalf("client without a certificate: %q", got)
	}

	// A certificate of another CA fails the handshake (TLS 1.3 reports
	// it on the first read). Go's client sends a certificate only if the
	// server names its CA: this one is sent anyway.
	stranger := other.Client(t, pkix.Name{CommonName: "partner-a", Organization: []string{"Acme"}})
	c, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1",
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &stranger.TLS, nil }})
	if err == nil {
		defer c.Close()
		_, _ = c.Write([]byte("hi"))
		_, err = c.Read(make([]byte, 16))
	}
	if err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
		t.Fatalf("client of another CA: %v, want an unknown certificate authority alert", err)
	}
}

func TestLoadProblems(t *testing.T) {
	ca := testkit.NewCA(t, "test CA")
	srv := ca.Server(t, "server")
	notPEM := t.TempDir() + "/ca.pem"
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		files tlsconf.Files
		want  string
	}{
		{tlsconf.Files{Cert: srv.CertFile}, "tls: a certificate and a key are both needed"},
		{tlsconf.Files{Cert: "/nonexistent/cert.pem", Key: srv.KeyFile}, "tls-cert: open /nonexistent/cert.pem: no such file or directory"},
		{tlsconf.Files{Cert: srv.CertFile, Key: "/nonexistent/key.pem"}, "tls-key: open /nonexistent/key.pem: no such file or directory"},
		{tlsconf.Files{Cert: srv.KeyFile, Key: srv.KeyFile}, "tls-cert " + srv.KeyFile + ", tls-key " + srv.KeyFile + ": tls: failed to find certificate PEM data in certificate input, but did find a private key; PEM inputs may have been switched"},
		{tlsconf.Files{Cert: srv.CertFile, Key: srv.KeyFile, ClientCA: notPEM}, "tls-client-ca " + notPEM + ": no PEM certificate in it"},
	} {
		_, err := tlsconf.Load(tt.files)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Load(%+v): %v\nwant %s", tt.files, err, tt.want)
		}
	}
}
