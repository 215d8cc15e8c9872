package callers_test

import (
	"slices"
	"testing"

	"github.com/a2ad/a2ad/callers"
	"github.com/google/go-cmp/cmp"
)

func TestAuthenticateSubject(t *testing.T) {
	path := writeKeysFile(t, `keys:
  - id: partner-a
    hash: "`+hashPartner+`"
    tiers: [public]
    tls_subjects: ["CN=partner-a,O=Acme", "CN=partner-a-backup,O=Acme"]
  - id: old
    hash: "`+hashOld+`"
    tiers: [public]
    enabled: false
    tls_subjects: ["CN=old,O=Acme"]
  - id: billing
    hash: "`+hashBilling+`"
    tiers: [internal]
`)
	ks := mustLoadKeys(t, path)
	for _, subject := range []string{"CN=partner-a,O=Acme", "CN=partner-a-backup,O=Acme"} {
		key, ok := ks.AuthenticateSubject(subject)
		if !ok || key.CallerID != "partner-a" || !slices.Equal(key.Tiers, []string{"public"}) || key.Hash != ([32]byte{}) || key.ID != "" {
			t.Errorf("AuthenticateSubject(%q) = %+v, %v; want partner-a", subject, key, ok)
		}
	}
	for _, subject := range []string{"CN=old,O=Acme", "CN=partner-a", "cn=partner-a,o=acme", ""} {
		if key, ok := ks.AuthenticateSubject(subject); ok {
			t.Errorf("AuthenticateSubject(%q) = %+v, want none", subject, key)
		}
	}
	// The copy is the caller's own.
	key, _ := ks.AuthenticateSubject("CN=partner-a,O=Acme")
	key.TLSSubjects[0] = "changed"
	if again, _ := ks.AuthenticateSubject("CN=partner-a,O=Acme"); again.TLSSubjects[0] != "CN=partner-a,O=Acme" {
		t.Fatalf("a returned key shares its subjects: %v", again.TLSSubjects)
	}
	var nilKeys *callers.Keys
	if _, ok := nilKeys.AuthenticateSubject("CN=partner-a,O=Acme"); ok {
		t.Fatal("nil Keys authenticated a subject")
	}
}

func TestTLSSubjectsProblems(t *testing.T) {
	path := writeKeysFile(t, `keys:
  - id: a
    hash: "`+hashPartner+`"
    tiers: [public]
    tls_subjects: ["CN=a", "partner-a", 7, [x], "subject=CN = a, O = Acme"]
  - id: b
    hash: "`+hashBilling+`"
    tiers: [public]
    tls_subjects: ["cn=a"]
  - id: c
    hash: "`+hashOld+`"
    tiers: [public]
    tls_subjects: "CN=c"
`)
	_, err := callers.LoadKeys(path)
	le, ok := err.(*callers.LoadError)
	if !ok {
		t.Fatalf("LoadKeys: %v, want a *LoadError", err)
	}
	var got []string
	for _, p := range le.Problems {
		got = append(got, p.String())
	}
	want := []string{
		`5:28: /keys/0/tls_subjects/1 (caller "a"): tls_subjects[1] must be a distinguished name such as "CN=partner-a,O=Acme" (RFC 4514), got "partner-a": "partner-a" has no "="`,
		`5:41: /keys/0/tls_subjects/2 (caller "a"): tls_subjects[2] must be a string, got an integer; quote it to make it a string`,
		`5:44: /keys/0/tls_subjects/3 (caller "a"): tls_subjects[3] must be a string, got a list`,
		`5:49: /keys/0/tls_subjects/4 (caller "a"): tls_subjects[4] must be a distinguished name such as "CN=partner-a,O=Acme" (RFC 4514), got "subject=CN = a, O = Acme": this is openssl's default form, whose RDNs are in the other order: copy what openssl x509 -noout -subject -nameopt RFC2253 prints`,
		`9:20: /keys/1/tls_subjects/0 (caller "b"): tls_subjects[0]: subject "cn=a" is already caller "a"'s (line 5)`,
		`13:19: /keys/2/tls_subjects (caller "c"): tls_subjects must be a list of certificate subjects, got a string`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("problems (-want +got):\n%s", diff)
	}
}

// TestSubjectOfCallerWithKeysRevoked: in a version 2 file, the subjects
// are the caller's, not one key's: revoking its keys leaves them.
func TestSubjectOfCallerWithKeysRevoked(t *testing.T) {
	ks := mustLoadKeys(t, writeKeysFile(t, `version: 2
keys:
  - id: partner-a
    tiers: [partner]
    tls_subjects: ["CN=partner-a,O=Acme"]
    keys:
      - {id: k1, hash: "`+hashPartner+`", revoked: 2026-11-24T06:00:00Z}
`))
	if _, ok := ks.Authenticate(secretPartner); ok {
		t.Fatal("a revoked key authenticated")
	}
	key, ok := ks.AuthenticateSubject("CN=partner-a,O=Acme")
	if !ok || key.CallerID != "partner-a" || !slices.Equal(key.Tiers, []string{"partner"}) {
		t.Fatalf("AuthenticateSubject = %+v, %v; want partner-a", key, ok)
	}
}
