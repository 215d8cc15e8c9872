// Package tlsconf is the one home of a2ad's server TLS: the certificate
// and key of --tls-cert and --tls-key, and the client CAs of
// --tls-client-ca, loaded from PEM files and reloaded (on SIGHUP) without
// dropping a connection. Each listener (main, admin, gRPC) takes its
// *tls.Config from one Reloader: open connections keep the session they
// have, and new handshakes see what was loaded last.
package tlsconf
