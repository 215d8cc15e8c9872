package admincmd

import (
	"strings"
	"testing"

	"github.com/a2ad/a2ad/admin"
)

// TestPrintReloadTLS: a2ad reload says what became of the certificate, so
// that a reload that exits 1 for a bad certificate names the problem.
func TestPrintReloadTLS(t *testing.T) {
	no := false
	r := &admin.ReloadReport{
		Catalog:          admin.CatalogReload{Reloaded: true, Version: "6c5d08c97c45dd65", Functions: 6},
		Keys:             &admin.KeysReload{Reloaded: true, Entries: 2},
		AuditLogReopened: &no,
		TLS: &admin.TLSReload{Problems: []string{"tls-cert cert.pem, tls-key key.pem: tls: failed to find any PEM data in certificate input"},
			NotAfter: "2026-11-26T07:23:21Z"},
	}
	var b strings.Builder
	PrintReload(&b, r)
	want := "catalog    reloaded: version 6c5d08c97c45dd65 (unchanged), 6 functions\n" +
		"keys       reloaded: 2 callers, 0 streams ended\n" +
		"audit log  not reopened (see the server's log)\n" +
		"tls        not reloaded: the certificate in force (valid until 2026-11-26T07:23:21Z) stays\n" +
		"  tls-cert cert.pem, tls-key key.pem: tls: failed to find any PEM data in certificate input\n"
	if b.String() != want {
		t.Errorf("PrintReload =\n%s\nwant\n%s", b.String(), want)
	}
	r.TLS = &admin.TLSReload{Reloaded: true, NotAfter: "2027-02-01T00:00:00Z"}
	b.Reset()
	PrintReload(&b, r)
	if !strings.HasSuffix(b.String(), "\ntls        reloaded: the certificate is valid until 2027-02-01T00:00:00Z\n") {
		t.Errorf("PrintReload of a reloaded certificate =\n%s", b.String())
	}
}
