package main

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/internal/testkit"
)

// tlsSetup is a CA, a server certificate for 127.0.0.1 in files the test
// may replace, and a keys file where partner-a has a key and a client
// certificate subject, and ops a key only.
type tlsSetup struct {
	ca                *testkit.CA
	certFile, keyFile string
	keys              string
	partnerKey        string
	opsKey            string
}

const partnerSubject = "CN=partner-a,O=Acme"

func newTLSSetup(t *testing.T) *tlsSetup {
	t.Helper()
	dir := t.TempDir()
	s := &tlsSetup{ca: testkit.NewCA(t, "a2ad test CA"), certFile: filepath.Join(dir, "cert.pem"),
		keyFile: filepath.Join(dir, "key.pem"), keys: filepath.Join(dir, "keys.yaml")}
	s.useServerCert(t, "first")
	s.partnerKey = mustAppendKey(t, s.keys, "partner-a", "partner")
	s.opsKey = mustAppendKey(t, s.keys, "ops", "internal", "partner")
	b, err := os.ReadFile(s.keys)
	if err != nil {
		t.Fatal(err)
	}
	// The first entry is partner-a's: give it its certificate's subject.
	text := strings.Replace(string(b), "tiers: [partner]", "tiers: [partner]\n    tls_subjects: [\""+partnerSubject+"\"]", 1)
	putFile(t, s.keys, text)
	if _, err := callers.LoadKeys(s.keys); err != nil {
		t.Fatal(err)
	}
	return s
}

// useServerCert puts a new server certificate named cn in the files.
func (s *tlsSetup) useServerCert(t *testing.T, cn string) {
	t.Helper()
	c := s.ca.Server(t, cn)
	for from, to := range map[string]string{c.CertFile: s.certFile, c.KeyFile: s.keyFile} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		putFile(t, to, string(b))
	}
}

// client trusts the test CA and presents certs, on connections it keeps.
func (s *tlsSetup) client(certs ...tls.Certificate) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: s.ca.Pool(), Certificates: certs},
	}}
}

// call posts message/send of demo::echo and returns the HTTP status and
// the answer.
func tlsEcho(t *testing.T, hc *http.Client, base string, header http.Header) (int, map[string]any) {
	t.Helper()
	resp, body := postURL(t, hc, base+"/a2a", rpcBody("message/send", sendParams("m1", "demo::echo", map[string]any{"text": "hi"}, true)), header)
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("answer %d %q: %v", resp.StatusCode, body, err)
	}
	return resp.StatusCode, out
}

func bearer(secret string) http.Header { return http.Header{"Authorization": {"Bearer " + secret}} }

// TestTLSAndMutualTLS runs the real binary with a certificate and client
// CAs: the card and the admin listener are on https, a client certificate
// whose subject a key entry holds is that caller, an unknown one and none
// at all get 401 on /a2a (no certificate is allowed through the handshake:
// the public card and the probes need none), TLS 1.1 is refused, and
// SIGHUP swaps the certificate for new handshakes while an open
// connection goes on.
func TestTLSAndMutualTLS(t *testing.T) {
	skipShort(t, "runs the real binary")
	s := newTLSSetup(t)
	dir := t.TempDir()
	p := startBinary(t, exampleCatalog, filepath.Join(dir, "a2ad.db"), "--keys", s.keys,
		"--tls-cert", s.certFile, "--tls-key", s.keyFile, "--tls-client-ca", s.ca.PEMFile)
	if !strings.HasPrefix(p.base, "https://127.0.0.1:") {
		t.Fatalf("base URL %q, want https://127.0.0.1:…", p.base)
	}
	admin := strings.Replace(p.admin, "http://", "https://", 1)

	plain := s.client()
	resp, body := testkit.RoundTrip(t, plain, mustRequest(t, http.MethodGet, p.base+"/.well-known/agent-card.json"))
	var card struct {
		URL string `json:"url"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &card) != nil || card.URL != p.base+"/a2a" {
		t.Fatalf("card: %d %s, want its url %s/a2a", resp.StatusCode, body, p.base)
	}
	if resp, _ := testkit.RoundTrip(t, plain, mustRequest(t, http.MethodGet, admin+"/readyz")); resp.StatusCode != 200 {
		t.Fatalf("admin /readyz over TLS: %d", resp.StatusCode)
	}
	// The admin listener's own routes still answer loopback callers.
	if resp, _ := testkit.RoundTrip(t, plain, mustRequest(t, http.MethodGet, admin+"/admin/v1/tasks")); resp.StatusCode != 200 {
		t.Fatalf("admin /admin/v1/tasks over TLS: %d", resp.StatusCode)
	}

	// A client certificate of partner-a is partner-a: its task is
	// partner-a's, readable with partner-a's key and not with ops's.
	partner := s.client(s.ca.Client(t, pkix.Name{CommonName: "partner-a", Organization: []string{"Acme"}}).TLS)
	code, out := tlsEcho(t, partner, p.base, nil)
	if code != 200 || out["result"] == nil {
		t.Fatalf("partner-a by certificate: %d %v", code, out)
	}
	taskID := out["result"].(map[string]any)["id"].(string)
	get := rpcBody("tasks/get", map[string]any{"id": taskID})
	if resp, body := postURL(t, plain, p.base+"/a2a", get, bearer(s.partnerKey)); resp.StatusCode != 200 || !strings.Contains(string(body), `"state":"completed"`) {
		t.Fatalf("partner-a's key reads the task: %d %s", resp.StatusCode, body)
	}
	if _, body := postURL(t, plain, p.base+"/a2a", get, bearer(s.opsKey)); !strings.Contains(string(body), `"code":-32001`) {
		t.Fatalf("ops reads partner-a's task: %s", body)
	}
	// The certificate and partner-a's own key agree; ops's key does not.
	if code, out := tlsEcho(t, partner, p.base, bearer(s.partnerKey)); code != 200 || out["result"] == nil {
		t.Fatalf("certificate and the same caller's key: %d %v", code, out)
	}
	if code, out := tlsEcho(t, partner, p.base, bearer(s.opsKey)); code != 401 || errText(t, out) != "-32054 Conflicting credentials: send one API key, in the Authorization header (Bearer) or in X-API-Key, once" {
		t.Fatalf("certificate and another caller's key: %d %v, want 401 and conflicting credentials", code, out)
	}

	// A certificate of the CA that no entry holds, and none at all: 401.
	stranger := s.client(s.ca.Client(t, pkix.Name{CommonName: "stranger", Organization: []string{"Acme"}}).TLS)
	for _, tt := range []struct {
		name string
		hc   *http.Client
		want string
	}{
		{"unknown certificate", stranger, "-32054 Invalid API key"},
		{"no certificate", plain, "-32054 Authentication required: send an API key in the Authorization header (Bearer) or in X-API-Key"},
	} {
		if code, out := tlsEcho(t, tt.hc, p.base, nil); code != 401 || errText(t, out) != tt.want {
			t.Errorf("%s: %d %v, want 401 and %s", tt.name, code, out, tt.want)
		}
	}
	// An unknown certificate with a good key: the key decides.
	if code, out := tlsEcho(t, stranger, p.base, bearer(s.opsKey)); code != 200 || out["result"] == nil {
		t.Fatalf("unknown certificate with ops's key: %d %v", code, out)
	}
	waitLogged(t, p, `"tls_subject":"CN=stranger,O=Acme"`)

	// TLS 1.1 is refused.
	addr := strings.TrimPrefix(p.base, "https://")
	if _, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: s.ca.Pool(), MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}); err == nil ||
		!strings.Contains(err.Error(), "protocol version not supported") {
		t.Fatalf("TLS 1.1 handshake: %v, want a protocol version alert", err)
	}

	tlsReload(t, s, p, plain)
}

// tlsReload swaps the certificate files under the running binary and
// sends SIGHUP: a connection open before goes on, new handshakes see the
// new certificate. A reload with a broken key keeps the certificate.
func tlsReload(t *testing.T, s *tlsSetup, p *process, hc *http.Client) {
	t.Helper()
	card := p.base + "/.well-known/agent-card.json"
	reused := func() bool {
		var got bool
		req := mustRequest(t, http.MethodGet, card)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(ci httptrace.GotConnInfo) { got = ci.Reused },
		}))
		if resp, _ := testkit.RoundTrip(t, hc, req); resp.StatusCode != 200 || resp.TLS.PeerCertificates[0].Subject.CommonName != "first" {
			t.Fatalf("card on the open connection: %d, certificate %q", resp.StatusCode, resp.TLS.PeerCertificates[0].Subject.CommonName)
		}
		return got
	}
	reused() // the connection is open now

	putFile(t, s.keyFile, "not a key")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLogged(t, p, "tls certificate not reloaded: the previous one stays in force")
	if cn := dialCN(t, s, p); cn != "first" {
		t.Fatalf("after a failed reload new handshakes see %q", cn)
	}

	s.useServerCert(t, "second")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLogged(t, p, `"subject":"CN=second","not_after"`)
	if !reused() {
		t.Fatal("the request after the reload did not reuse the open connection")
	}
	if cn := dialCN(t, s, p); cn != "second" {
		t.Fatalf("after the reload new handshakes see %q", cn)
	}
}

// dialCN is the common name of the certificate a new handshake sees.
func dialCN(t *testing.T, s *tlsSetup, p *process) string {
	t.Helper()
	c, err := tls.Dial("tcp", strings.TrimPrefix(p.base, "https://"), &tls.Config{RootCAs: s.ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// waitLogged waits until p has logged text.
func waitLogged(t *testing.T, p *process, text string) {
	t.Helper()
	eventually(t, 10*time.Second, "a log line with "+text, func() bool { return strings.Contains(p.logText(), text) })
}

// errText is the code and message of the JSON-RPC error out.
func errText(t *testing.T, out map[string]any) string {
	t.Helper()
	code, msg := rpcError(t, out)
	return fmt.Sprintf("%d %s", code, msg)
}

// TestClientCertificateSubjectsAsEncoded runs the real binary with mutual
// TLS: a certificate's subject matches an entry only as encoded (the same
// RDNs in the same order), so a reordered subject and a multi-valued RDN
// of partner-a's attributes are refused, while an entry that names a
// multi-valued RDN matches it, and an entry copied from openssl's own
// RFC 2253 output (an OU, an emailAddress and the "subject=" openssl
// prints) matches its certificate.
func TestClientCertificateSubjectsAsEncoded(t *testing.T) {
	skipShort(t, "runs the real binary")
	if _, err := exec.LookPath("openssl"); err != nil {
		if os.Getenv("A2AD_REQUIRE_OPENSSL") == "1" {
			t.Fatal("A2AD_REQUIRE_OPENSSL=1 but no openssl on PATH (apt-get install openssl)")
		}
		t.Skip("openssl is not installed: skipping the test of subjects as openssl prints them (apt-get install openssl; A2AD_REQUIRE_OPENSSL=1 makes this a failure)")
	}
	s := newTLSSetup(t) // partner-a: "CN=partner-a,O=Acme"
	attr := func(oid asn1.ObjectIdentifier, v string) pkix.AttributeTypeAndValue {
		return pkix.AttributeTypeAndValue{Type: oid, Value: v}
	}
	cn, o, ou := asn1.ObjectIdentifier{2, 5, 4, 3}, asn1.ObjectIdentifier{2, 5, 4, 10}, asn1.ObjectIdentifier{2, 5, 4, 11}
	email := asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	exact := s.ca.ClientRDNs(t, pkix.RDNSequence{{attr(o, "Acme")}, {attr(cn, "partner-a")}})
	reordered := s.ca.ClientRDNs(t, pkix.RDNSequence{{attr(cn, "partner-a")}, {attr(o, "Acme")}})
	multi := s.ca.ClientRDNs(t, pkix.RDNSequence{{attr(o, "Acme"), attr(cn, "partner-a")}})
	multiM := s.ca.ClientRDNs(t, pkix.RDNSequence{{attr(o, "Acme"), attr(cn, "partner-m")}})
	withOU := s.ca.ClientRDNs(t, pkix.RDNSequence{{attr(o, "Acme, Inc.")}, {attr(ou, "R&D")}, {attr(cn, "partner-b")}, {attr(email, "b@acme.example")}})
	out, err := exec.Command("openssl", "x509", "-noout", "-subject", "-nameopt", "RFC2253", "-in", withOU.CertFile).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl x509: %v\n%s", err, out)
	}
	printed := strings.TrimSpace(string(out))
	if want := `subject=emailAddress=b@acme.example,CN=partner-b,OU=R&D,O=Acme\, Inc.`; printed != want {
		t.Fatalf("openssl printed %q, want %q", printed, want)
	}
	keyOf := map[string]string{"partner-a": s.partnerKey, "partner-b": mustAppendKey(t, s.keys, "partner-b", "partner"),
		"partner-m": mustAppendKey(t, s.keys, "partner-m", "partner")}
	b, err := os.ReadFile(s.keys)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for id, subject := range map[string]string{"partner-b": printed, "partner-m": "CN=partner-m+O=Acme"} {
		q, _ := json.Marshal(subject)
		text = strings.Replace(text, "id: "+id+"\n", "id: "+id+"\n    tls_subjects: ["+string(q)+"]\n", 1)
	}
	putFile(t, s.keys, text)
	if _, err := callers.LoadKeys(s.keys); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, exampleCatalog, filepath.Join(t.TempDir(), "a2ad.db"), "--keys", s.keys,
		"--tls-cert", s.certFile, "--tls-key", s.keyFile, "--tls-client-ca", s.ca.PEMFile)
	for _, tt := range []struct {
		name   string
		cert   testkit.Issued
		caller string // "" for refused
	}{
		{"exact", exact, "partner-a"},
		{"reordered", reordered, ""},
		{"multi-valued", multi, ""},
		{"multi-valued named by an entry", multiM, "partner-m"},
		{"OU, emailAddress, as openssl prints", withOU, "partner-b"},
	} {
		code, out := tlsEcho(t, s.client(tt.cert.TLS), p.base, nil)
		if tt.caller == "" {
			if code != 401 || errText(t, out) != "-32054 Invalid API key" {
				t.Errorf("%s: %d %v, want 401 -32054 Invalid API key", tt.name, code, out)
			}
			continue
		}
		if code != 200 || out["result"] == nil {
			t.Errorf("%s: %d %v, want %s's task", tt.name, code, out, tt.caller)
			continue
		}
		// The task is the caller's: its key reads it.
		get := rpcBody("tasks/get", map[string]any{"id": out["result"].(map[string]any)["id"]})
		if _, body := postURL(t, s.client(), p.base+"/a2a", get, bearer(keyOf[tt.caller])); !strings.Contains(string(body), `"state":"completed"`) {
			t.Errorf("%s: %s's key reads the task: %s", tt.name, tt.caller, body)
		}
	}
	waitLogged(t, p, `"tls_subject":"O=Acme,CN=partner-a"`)
	waitLogged(t, p, `"tls_subject":"O=Acme+CN=partner-a"`)
}
