package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/a2ad/a2ad/internal/dn"
)

// Files names the PEM files of the server's TLS.
type Files struct {
	Cert string // the certificate chain, leaf first
	Key  string // the leaf's private key
	// ClientCA, when set, holds the CAs whose client certificates a
	// handshake verifies (mutual TLS). A client that sends no certificate
	// is let through: the caller's credentials then decide (see Config).
	ClientCA string
}

// MinVersion is the oldest TLS version a2ad accepts.
const MinVersion = tls.VersionTLS12

// Reloader holds the certificate and client CAs in force. It is safe for
// concurrent use: handshakes read the state in force without locking, and
// Reload swaps in a new one.
type Reloader struct {
	files Files
	state atomic.Pointer[state]
	mu    sync.Mutex // serializes Reload
}

// state is one load of the files.
type state struct {
	cert      tls.Certificate // its Leaf is set
	clientCAs *x509.CertPool  // nil without Files.ClientCA
}

// Load reads the files and returns a Reloader that serves them. It
// returns an error naming the file at fault if one is unreadable or holds
// no usable certificate or key, or if the key does not match the
// certificate.
func Load(f Files) (*Reloader, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("tls: a certificate and a key are both needed")
	}
	r := &Reloader{files: f}
	s, err := load(f)
	if err != nil {
		return nil, err
	}
	r.state.Store(s)
	return r, nil
}

// Reload reads the files again and puts them in force for the handshakes
// to come; connections already open keep theirs. If a file has a problem
// it returns the error and what was in force stays.
func (r *Reloader) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := load(r.files)
	if err != nil {
		return err
	}
	r.state.Store(s)
	return nil
}

// Leaf is the server certificate in force.
func (r *Reloader) Leaf() *x509.Certificate { return r.state.Load().cert.Leaf }

// MutualTLS reports whether handshakes verify client certificates.
func (r *Reloader) MutualTLS() bool { return r.files.ClientCA != "" }

// Config returns the TLS configuration of one listener, whose ALPN
// protocols are nextProtos (e.g. "http/1.1"; "h2" for gRPC). Every
// handshake takes the certificate and client CAs in force at its start,
// through GetConfigForClient; TLS 1.2 is the minimum. With client CAs a
// client certificate is verified if one is sent (a bad one fails the
// handshake) and optional otherwise, so that the public card, the probes
// and callers with API keys need none.
//
// A gRPC server takes it as credentials.NewTLS(r.Config("h2")).
func (r *Reloader) Config(nextProtos ...string) *tls.Config {
	l := &listenerConfig{r: r, nextProtos: nextProtos}
	return &tls.Config{
		MinVersion:         MinVersion,
		NextProtos:         nextProtos,
		GetConfigForClient: l.forClient,
	}
}

// listenerConfig builds one listener's configuration of each state in
// force, once: handshakes share it (its session ticket keys are the
// outer configuration's, as GetConfigForClient documents).
type listenerConfig struct {
	r          *Reloader
	nextProtos []string
	built      atomic.Pointer[builtConfig]
}

type builtConfig struct {
	of  *state
	cfg *tls.Config
}

func (l *listenerConfig) forClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	s := l.r.state.Load()
	if b := l.built.Load(); b != nil && b.of == s {
		return b.cfg, nil
	}
	cfg := &tls.Config{
		MinVersion:   MinVersion,
		NextProtos:   l.nextProtos,
		Certificates: []tls.Certificate{s.cert},
	}
	if s.clientCAs != nil {
		cfg.ClientCAs = s.clientCAs
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	l.built.Store(&builtConfig{of: s, cfg: cfg})
	return cfg, nil
}

// ClientSubject returns the subject of the client certificate a
// handshake verified against the client CAs, as RFC 4514 writes it (e.g.
// "CN=partner-a,O=Acme", the last RDN first, as `openssl x509 -subject
// -nameopt RFC2253` prints it), read from the certificate as encoded
// (dn.FromDER): not Go's pkix.Name.String, which re-sorts attributes and
// merges RDNs. It returns false for a plain connection, and for one whose
// client sent no certificate or one whose subject does not parse.
func ClientSubject(cs *tls.ConnectionState) (string, bool) {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return "", false
	}
	n, err := dn.FromDER(cs.VerifiedChains[0][0].RawSubject)
	if err != nil || len(n) == 0 {
		return "", false
	}
	return n.String(), true
}

// load reads the files.
func load(f Files) (*state, error) {
	certPEM, err := os.ReadFile(f.Cert)
	if err != nil {
		return nil, fmt.Errorf("tls-cert: %w", err)
	}
	keyPEM, err := os.ReadFile(f.Key)
	if err != nil {
		return nil, fmt.Errorf("tls-key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tls-cert %s, tls-key %s: %w", f.Cert, f.Key, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("tls-cert %s: %w", f.Cert, err)
		}
	}
	s := &state{cert: cert}
	if f.ClientCA != "" {
		pem, err := os.ReadFile(f.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("tls-client-ca: %w", err)
		}
		s.clientCAs = x509.NewCertPool()
		if !s.clientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls-client-ca %s: no PEM certificate in it", f.ClientCA)
		}
	}
	return s, nil
}
