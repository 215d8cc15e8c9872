package testkit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority made for a test: it issues the server and
// client certificates of TLS tests, and nothing outside the test trusts it.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEMFile is the CA's certificate as a PEM file, for --tls-client-ca.
	PEMFile string
	dir     string
}

// NewCA makes a CA named cn, writing its certificate in a temporary
// directory of tb.
func NewCA(tb testing.TB, cn string) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(tb),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	ca := &CA{Cert: cert, key: key, dir: tb.TempDir()}
	ca.PEMFile = writePEM(tb, filepath.Join(ca.dir, "ca.pem"), "CERTIFICATE", der)
	return ca
}

// Pool is a pool holding the CA, for a client that trusts it.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Issued is a certificate the CA issued, with its key, in memory and as
// PEM files.
type Issued struct {
	Cert     *x509.Certificate
	TLS      tls.Certificate
	CertFile string
	KeyFile  string
}

// Server issues a certificate for 127.0.0.1 and localhost, named cn.
func (ca *CA) Server(tb testing.TB, cn string) Issued {
	tb.Helper()
	return ca.issue(tb, pkix.Name{CommonName: cn}, x509.ExtKeyUsageServerAuth)
}

// Client issues a client certificate with the subject subject.
func (ca *CA) Client(tb testing.TB, subject pkix.Name) Issued {
	tb.Helper()
	return ca.issue(tb, subject, x509.ExtKeyUsageClientAuth)
}

// ClientRDNs issues a client certificate whose subject is rdns as
// encoded, in that order, with any multi-valued RDN: pkix.Name would
// sort the attributes and give each its own RDN.
func (ca *CA) ClientRDNs(tb testing.TB, rdns pkix.RDNSequence) Issued {
	tb.Helper()
	raw, err := asn1.Marshal(rdns)
	if err != nil {
		tb.Fatal(err)
	}
	return ca.issueRaw(tb, pkix.Name{}, raw, x509.ExtKeyUsageClientAuth)
}

func (ca *CA) issue(tb testing.TB, subject pkix.Name, usage x509.ExtKeyUsage) Issued {
	tb.Helper()
	return ca.issueRaw(tb, subject, nil, usage)
}

func (ca *CA) issueRaw(tb testing.TB, subject pkix.Name, rawSubject []byte, usage x509.ExtKeyUsage) Issued {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb),
		Subject:      subject,
		RawSubject:   rawSubject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	return Issued{
		Cert:     cert,
		TLS:      tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert},
		CertFile: writePEM(tb, filepath.Join(dir, "cert.pem"), "CERTIFICATE", der),
		KeyFile:  writePEM(tb, filepath.Join(dir, "key.pem"), "PRIVATE KEY", keyDER),
	}
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func serial(tb testing.TB) *big.Int {
	tb.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func writePEM(tb testing.TB, path, typ string, der []byte) string {
	tb.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
