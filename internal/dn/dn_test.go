package dn_test

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/internal/dn"
)

func TestParseString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"CN=partner-a,O=Acme", "CN=partner-a,O=Acme"},
		{"subject=CN=partner-a,OU=Eng,O=Acme", "CN=partner-a,OU=Eng,O=Acme"},
		{"cn=partner-a,o=Acme", "CN=partner-a,O=Acme"},
		{"2.5.4.3=partner-a", "CN=partner-a"},
		{`CN=a\,b\+c\"d\\e\;f\<g\>h=i`, `CN=a\,b\+c\"d\\e\;f\<g\>h=i`},
		{`CN=\ lead\#,O=\#x,OU=trail\ `, `CN=\ lead#,O=\#x,OU=trail\ `},
		{`O=Acm\C3\A9`, "O=Acmé"},
		{`O=Acmé`, "O=Acmé"},
		{"CN=partner-a+O=Acme", "O=Acme+CN=partner-a"},
		{"CN=#0c09706172746e65722d61", "CN=partner-a"}, // a UTF8String as DER
		{"1.2.3.4=#020101", "1.2.3.4=#020101"},         // an INTEGER
		{"emailAddress=a@b.c,SERIALNUMBER=7", "emailAddress=a@b.c,serialNumber=7"},
	} {
		n, err := dn.Parse(tt.in)
		if err != nil || n.String() != tt.want {
			t.Errorf("Parse(%q) = %q, %v; want %q", tt.in, n, err, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", "no attribute"},
		{"partner-a", `"partner-a" has no "="`},
		{"CN = partner-a, O = Acme", dn.ErrOpenSSLDefault.Error()},
		{"subject=O = Acme, CN = partner-a", dn.ErrOpenSSLDefault.Error()},
		{"CN=partner-a, O=Acme", `unknown attribute type " O" (write it as its OID, e.g. 2.5.4.3 for CN)`},
		{"CN=partner-a ,O=Acme", `the value of CN: a trailing space must be escaped ("\ "); spaces after "," or "+" are not allowed`},
		{"CN= a", `the value of CN: a leading space must be escaped ("\ ")`},
		{"XX=a", `unknown attribute type "XX" (write it as its OID, e.g. 2.5.4.3 for CN)`},
		{"2.5=a,3=b", `attribute type "3" is neither a name nor an OID`},
		{"=a", "an attribute has no type"},
		{`CN=a\`, `the value of CN: it ends with "\"`},
		{`CN=a\zz`, `the value of CN: "\z" is neither an escaped special character nor a hex pair`},
		{`CN=a;b`, `the value of CN: ';' must be escaped (\;)`},
		{`CN=\FF`, "the value of CN: its escaped bytes are not UTF-8"},
		{"CN=#zz", "value #zz is not hex"},
		{"CN=#0c01", "value #0c01 is not one DER-encoded value"},
		{"CN=a,", `"" has no "="`},
	} {
		if n, err := dn.Parse(tt.in); err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) = %q, %v; want error %q", tt.in, n, err, tt.want)
		}
	}
}

// TestOpenSSLSubjects issues certificates with openssl and checks that
// FromDER of each subject is the same Name as Parse of what `openssl x509
// -noout -subject -nameopt RFC2253` prints, that the order of the RDNs
// and multi-valued RDNs count, and that openssl's default form is refused.
func TestOpenSSLSubjects(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed: skipping the test of subjects openssl prints")
	}
	subjects := map[string]string{
		"plain":    "/O=Acme/CN=partner-a",
		"reversed": "/CN=partner-a/O=Acme",
		"multi":    "/O=Acme+CN=partner-a",
		"ou":       "/C=DE/O=Acme, Inc./OU=R&D \\+ QA/CN=partner-a/emailAddress=a@example.com",
		"utf8":     "/O=Acmé/CN= partner #1 ",
	}
	got := map[string]string{}
	for name, subj := range subjects {
		der, printed, def := opensslCert(t, subj)
		fromCert, err := dn.FromDER(der)
		if err != nil {
			t.Fatalf("%s: FromDER: %v", name, err)
		}
		parsed, err := dn.Parse(printed)
		if err != nil {
			t.Fatalf("%s: Parse(%q): %v", name, printed, err)
		}
		if fromCert.String() != parsed.String() {
			t.Errorf("%s: the certificate's subject is %q, openssl printed %q (read as %q)", name, fromCert, printed, parsed)
		}
		if _, err := dn.Parse(def); !errors.Is(err, dn.ErrOpenSSLDefault) {
			t.Errorf("%s: Parse(%q) = %v, want ErrOpenSSLDefault", name, def, err)
		}
		got[name] = fromCert.String()
	}
	want := map[string]string{
		"plain":    "CN=partner-a,O=Acme",
		"reversed": "O=Acme,CN=partner-a",
		"multi":    "O=Acme+CN=partner-a",
		"ou":       `emailAddress=a@example.com,CN=partner-a,OU=R&D \+ QA,O=Acme\, Inc.,C=DE`,
		"utf8":     `CN=\ partner #1\ ,O=Acmé`,
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %q, want %q", name, got[name], w)
		}
	}
	if n, _ := dn.Parse(got["multi"]); !n.MultiValued() {
		t.Errorf("%q is not multi-valued", got["multi"])
	}
	if n, _ := dn.Parse(got["plain"]); n.MultiValued() {
		t.Errorf("%q is multi-valued", got["plain"])
	}
}

// opensslCert makes a self-signed certificate of subject subj with
// openssl, and returns its raw subject and what openssl prints of it with
// -nameopt RFC2253 and by default.
func opensslCert(t *testing.T, subj string) (der []byte, rfc2253, def string) {
	t.Helper()
	dir := t.TempDir()
	cert := filepath.Join(dir, "cert.pem")
	run := func(args ...string) string {
		out, err := exec.Command("openssl", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSuffix(string(out), "\n")
	}
	run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-utf8", "-multivalue-rdn",
		"-keyout", filepath.Join(dir, "key.pem"), "-out", cert, "-subj", subj, "-days", "1")
	rfc2253 = run("x509", "-noout", "-subject", "-nameopt", "RFC2253", "-in", cert)
	def = run("x509", "-noout", "-subject", "-in", cert)
	b, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.RawSubject, rfc2253, def
}
