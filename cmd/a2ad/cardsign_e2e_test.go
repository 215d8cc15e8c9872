package main

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2ad/a2ad/agentcard/cardsign"
	"github.com/a2ad/a2ad/internal/jcs"
	"github.com/a2ad/a2ad/internal/testkit"
	"github.com/go-jose/go-jose/v4"
)

// pemKey is key as a PKCS #8 PEM block.
func pemKey(tb testing.TB, key crypto.Signer) []byte {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func kidOf(tb testing.TB, key crypto.Signer) string {
	tb.Helper()
	dir := tb.TempDir()
	f := filepath.Join(dir, "k.pem")
	if err := os.WriteFile(f, pemKey(tb, key), 0o600); err != nil {
		tb.Fatal(err)
	}
	keys, err := cardsign.LoadKeys([]string{f})
	if err != nil {
		tb.Fatal(err)
	}
	return keys[0].KID
}

// verifyCard checks every signature of the card doc as a verifier would,
// with go-jose over the RFC 8785 form: the protected header's alg, kid,
// typ "JOSE" and jku (which must name base's JWKS); the public key from
// that JWKS; the payload either the served JSON without signatures (what
// a2a-go computes) or the 1.0 model form (what the JS SDK computes). Each
// kid in wantKIDs must have one signature over each form, and no other kid
// may sign. It returns the kids in the JWKS.
func verifyCard(tb testing.TB, base string, doc []byte, wantKIDs []string) {
	tb.Helper()
	var card map[string]any
	if err := json.Unmarshal(doc, &card); err != nil {
		tb.Fatalf("card: %v", err)
	}
	raw, _ := json.Marshal(card["signatures"])
	var sigs []cardsign.Signature
	if err := json.Unmarshal(raw, &sigs); err != nil || len(sigs) == 0 {
		tb.Fatalf("card signatures %s: %v", raw, err)
	}
	delete(card, "signatures")
	served, err := jcs.Append(nil, card)
	if err != nil {
		tb.Fatal(err)
	}
	model, err := cardsign.ModelPayload(doc)
	if err != nil {
		tb.Fatal(err)
	}
	jku := base + "/.well-known/a2ad-card-keys.json"
	resp, body := httpGet(tb, jku)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/jwk-set+json" {
		tb.Fatalf("GET %s: %d %s: %s", jku, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		tb.Fatalf("JWKS: %v: %s", err, body)
	}
	var setKIDs []string
	for _, k := range set.Keys {
		setKIDs = append(setKIDs, k.KeyID)
		if !k.IsPublic() {
			tb.Fatalf("JWKS holds a private key: %s", body)
		}
	}
	if !slices.Equal(setKIDs, wantKIDs) {
		tb.Fatalf("JWKS kids %v, want %v", setKIDs, wantKIDs)
	}
	got := map[string]int{} // kid → 1 (served form) | 2 (model form)
	for i, s := range sigs {
		obj, err := jose.ParseDetached(s.Protected+".."+s.Signature, served,
			[]jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.ES512, jose.RS256, jose.EdDSA})
		if err != nil {
			tb.Fatalf("signature %d: %v", i, err)
		}
		h := obj.Signatures[0].Protected
		if h.KeyID == "" || h.ExtraHeaders["typ"] != "JOSE" || h.ExtraHeaders["jku"] != jku || h.Algorithm == "" {
			tb.Fatalf("signature %d: protected header %+v, want alg, kid, typ JOSE, jku %s", i, h, jku)
		}
		keys := set.Key(h.KeyID)
		if len(keys) != 1 {
			tb.Fatalf("signature %d: kid %s not in the JWKS", i, h.KeyID)
		}
		form := 0
		if obj.DetachedVerify(served, keys[0].Key) == nil {
			form = 1
		} else if obj.DetachedVerify(model, keys[0].Key) == nil {
			form = 2
		} else {
			tb.Fatalf("signature %d (kid %s) verifies over neither form; served form:\n%s", i, h.KeyID, served)
		}
		if got[h.KeyID]&form != 0 {
			tb.Fatalf("kid %s signs the same form twice", h.KeyID)
		}
		got[h.KeyID] |= form
	}
	for _, kid := range wantKIDs {
		if got[kid] != 3 {
			tb.Errorf("kid %s: forms signed %d, want both (3)", kid, got[kid])
		}
	}
	if len(got) != len(wantKIDs) {
		tb.Errorf("card signed by %v, want %v", got, wantKIDs)
	}
}

// signedCards fetches the public card (the default one and the 1.0 one),
// and the extended card over 0.3
// and 1.0 JSON-RPC with key, and verifies each; it returns the public
// card's ETag.
func signedCards(tb testing.TB, p *process, key string, wantKIDs []string) string {
	tb.Helper()
	resp, card := httpGet(tb, p.base+"/.well-known/agent-card.json")
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("card: %d", resp.StatusCode)
	}
	verifyCard(tb, p.base, card, wantKIDs)
	// The pure 1.0 card, to a request that asks for 1.0, is signed too.
	req, err := http.NewRequest(http.MethodGet, p.base+"/.well-known/agent-card.json", nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("A2A-Version", "1.0")
	v1resp, v1card := testkit.RoundTrip(tb, nil, req)
	if v1resp.StatusCode != http.StatusOK || bytes.Contains(v1card, []byte(`"protocolVersion":"0.3.0"`)) {
		tb.Fatalf("the 1.0 card: %d %s", v1resp.StatusCode, v1card)
	}
	verifyCard(tb, p.base, v1card, wantKIDs)
	for _, v := range []struct{ method, version string }{
		{"agent/getAuthenticatedExtendedCard", ""}, {"GetExtendedAgentCard", "1.0"},
	} {
		h := http.Header{"Authorization": {"Bearer " + key}}
		if v.version != "" {
			h.Set("A2A-Version", v.version)
		}
		resp, body := postRaw(tb, p.base, rpcBody(v.method, map[string]any{}), h)
		var rpc struct{ Result json.RawMessage }
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &rpc) != nil || rpc.Result == nil {
			tb.Fatalf("%s: %d %s", v.method, resp.StatusCode, body)
		}
		verifyCard(tb, p.base, rpc.Result, wantKIDs)
	}
	return resp.Header.Get("ETag")
}

// TestSignedCardRotation runs the binary with two key files (one of an
// ECDSA key, one of an RSA key), then adds an Ed25519 key to the first
// file and reloads, then removes the old ECDSA key and reloads: the public
// card and the extended card (0.3 and 1.0) verify at each stage against
// the JWKS the jku names, with exactly the keys in force; a reload that
// changes no key keeps the ETag, one that does changes it.
func TestSignedCardRotation(t *testing.T) {
	skipShort(t, "runs the real binary")
	dir := t.TempDir()
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	main, second := filepath.Join(dir, "card-keys.pem"), filepath.Join(dir, "rsa.pem")
	putFile(t, main, string(pemKey(t, ecKey)))
	putFile(t, second, string(pemKey(t, rsaKey)))
	keys := filepath.Join(dir, "keys.yaml")
	secret := mustAppendKey(t, keys, "acme", "partner")
	p := startBinary(t, exampleCatalog, filepath.Join(dir, "a2ad.db"), "--keys", keys,
		"--card-signing-key", main, "--card-signing-key", second)
	ec, rs, ed := kidOf(t, ecKey), kidOf(t, rsaKey), kidOf(t, edKey)

	etag1 := signedCards(t, p, secret, []string{ec, rs})
	reload := func(want []string) {
		t.Helper()
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			_, body := httpGet(t, p.base+"/.well-known/a2ad-card-keys.json")
			var set jose.JSONWebKeySet
			_ = json.Unmarshal(body, &set)
			var kids []string
			for _, k := range set.Keys {
				kids = append(kids, k.KeyID)
			}
			if slices.Equal(kids, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after SIGHUP the JWKS holds %v, want %v", kids, want)
			}
		}
	}
	// A reload that changes no key: same card, same ETag.
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, "card signing keys reloaded", 1)
	if etag := signedCards(t, p, secret, []string{ec, rs}); etag != etag1 {
		t.Errorf("ETag after a reload of the same keys %s, want %s", etag, etag1)
	}

	putFile(t, main, string(pemKey(t, ecKey))+string(pemKey(t, edKey)))
	reload([]string{ec, ed, rs})
	etag2 := signedCards(t, p, secret, []string{ec, ed, rs})

	putFile(t, main, string(pemKey(t, edKey)))
	reload([]string{ed, rs})
	etag3 := signedCards(t, p, secret, []string{ed, rs})
	if etag1 == etag2 || etag2 == etag3 {
		t.Errorf("ETags %s, %s, %s: want a new one per key set", etag1, etag2, etag3)
	}

	// A key file broken at reload keeps the keys in force.
	putFile(t, main, "not a key")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, "card signing keys not reloaded: the keys in force stay", 1)
	signedCards(t, p, secret, []string{ed, rs})
}

// waitLog waits until the binary's log holds msg n times.
func waitLog(tb testing.TB, p *process, msg string, n int) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		p.mu.Lock()
		c := strings.Count(p.logs.String(), `"message":"`+msg+`"`)
		p.mu.Unlock()
		if c >= n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("log never said %q %d times", msg, n)
		}
	}
}

// TestCardSigningKeyRefused: a key file that cannot be used stops serve
// with one line naming the file and the problem.
func TestCardSigningKeyRefused(t *testing.T) {
	skipShort(t, "runs the real binary")
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pubDER, _ := x509.MarshalPKIXPublicKey(p256.Public())
	ecDER, _ := x509.MarshalECPrivateKey(p224)
	good := write("good.pem", pemKey(t, p256))
	for _, tc := range []struct{ name, file, want string }{
		{"missing", filepath.Join(dir, "none.pem"), "card-signing-key DIR/none.pem: cannot read: no such file or directory"},
		{"not PEM", write("text.pem", []byte("hello\n")), "card-signing-key DIR/text.pem: no PEM block: want a PEM private key"},
		{"public key", write("pub.pem", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})), "card-signing-key DIR/pub.pem: holds a PUBLIC KEY, not a private key"},
		{"garbled", write("bad.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("xx")})), "card-signing-key DIR/bad.pem: not a private key a2ad can read: "},
		{"P-224", write("p224.pem", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER})), "card-signing-key DIR/p224.pem: unsupported algorithm: ECDSA on P-224 (use P-256, P-384 or P-521)"},
		{"RSA 1024", write("rsa1024.pem", pemKey(t, rsa1024)), "card-signing-key DIR/rsa1024.pem: unsupported algorithm: RSA of 1024 bits (RS256 needs 2048 at least)"},
		{"second block", write("two.pem", append(pemKey(t, p256), "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"...)), "card-signing-key DIR/two.pem (PEM block 2): holds a CERTIFICATE, not a private key"},
		{"same key twice", good, "card-signing-key DIR/good.pem: holds the same key as DIR/good.pem (kid " + kidOf(t, p256) + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"serve", "--catalog", exampleCatalog, "--store", filepath.Join(t.TempDir(), "a2ad.db"),
				"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--log-level", "error", "--card-signing-key", tc.file}
			if tc.name == "same key twice" {
				args = append(args, "--card-signing-key", good)
			}
			cmd := exec.Command(binary(t), args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err == nil {
				t.Fatal("serve started")
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := strings.ReplaceAll(lines[len(lines)-1], dir, "DIR")
			want := "a2ad: " + tc.want
			if !strings.HasPrefix(last, want) || strings.Count(last, "card-signing-key") != 1 {
				t.Errorf("serve says\n%s\nwant a line starting %q", stderr.String(), want)
			}
		})
	}
}
