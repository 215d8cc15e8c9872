package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/internal/tlsconf"
)

// openTLS loads the certificate every listener serves, if there is one.
func (m *Main) openTLS(context.Context) error {
	cfg := m.Config
	if cfg.TLSCert == "" {
		return nil
	}
	r, err := tlsconf.Load(tlsconf.Files{Cert: cfg.TLSCert, Key: cfg.TLSKey, ClientCA: cfg.TLSClientCA})
	if err != nil {
		return err
	}
	m.tls = r
	m.logCertificate("tls certificate loaded")
	return nil
}

// logCertificate logs the certificate in force, and warns when it has
// expired: clients refuse it, and a2ad keeps serving it until a reload
// brings a new one.
func (m *Main) logCertificate(msg string) {
	leaf := m.tls.Leaf()
	m.Logger.Info().Str("tls_cert", m.Config.TLSCert).Str("subject", leaf.Subject.String()).
		Time("not_after", leaf.NotAfter).Bool("mutual_tls", m.tls.MutualTLS()).Msg(msg)
	if time.Now().After(leaf.NotAfter) {
		m.Logger.Warn().Str("tls_cert", m.Config.TLSCert).Time("not_after", leaf.NotAfter).
			Msg("tls certificate expired: clients will refuse it")
	}
}

// withTLS is ln serving TLS when a2ad has a certificate, else ln. The TLS
// layer sits outside the connection caps, so that a refused connection
// costs no handshake, and outermost, so that net/http sees *tls.Conn
// (its handshake timeout, r.TLS). HTTP/1.1 only: the caps and timeouts of
// the main listener are tuned for one request at a time per connection.
func (m *Main) withTLS(ln net.Listener) net.Listener {
	if m.tls == nil {
		return ln
	}
	return tls.NewListener(ln, m.tls.Config("http/1.1"))
}

// scheme is the scheme of the default base URL.
func (m *Main) scheme() string {
	if m.tls != nil {
		return "https://"
	}
	return "http://"
}

// reloadTLS reads the certificate, its key and the client CAs again for
// the handshakes to come; open connections keep theirs. On a problem the
// ones in force stay.
func (m *Main) reloadTLS(r *admin.ReloadReport) error {
	if m.tls == nil {
		return nil
	}
	r.TLS = &admin.TLSReload{Problems: []string{}}
	if err := m.tls.Reload(); err != nil {
		r.TLS.Problems = append(r.TLS.Problems, err.Error())
		m.Logger.Error().Err(err).Str("tls_cert", m.Config.TLSCert).Msg("tls certificate not reloaded: the previous one stays in force")
		r.TLS.NotAfter = m.tls.Leaf().NotAfter.UTC().Format(time.RFC3339)
		return fmt.Errorf("tls: %w", err)
	}
	r.TLS.Reloaded = true
	r.TLS.NotAfter = m.tls.Leaf().NotAfter.UTC().Format(time.RFC3339)
	m.logCertificate("tls certificate reloaded")
	return nil
}
