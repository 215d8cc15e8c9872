package cardsign

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/go-jose/go-jose/v4"
)

// Key is a private key that signs cards, with its JWS algorithm and key
// id.
type Key struct {
	File string // the PEM file it was read from
	// Alg is the JWS algorithm: ES256, ES384 or ES512 for ECDSA on P-256,
	// P-384 or P-521, RS256 for RSA (2048 bits at least), EdDSA for
	// Ed25519.
	Alg jose.SignatureAlgorithm
	// KID is the RFC 7638 JWK thumbprint (SHA-256, base64url) of the
	// public key: derived from the key alone, so every replica that holds
	// the key names it alike, and a new key gets a new id.
	KID    string
	signer crypto.Signer
}

// Public returns the public key as a JWK (kid, alg, use "sig").
func (k *Key) Public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.signer.Public(), KeyID: k.KID, Algorithm: string(k.Alg), Use: "sig"}
}

// LoadFile reads the PEM private keys of a file, in order: one or more
// blocks, each PKCS #8, SEC 1 "EC PRIVATE KEY" or PKCS #1 "RSA PRIVATE
// KEY" (a file of several keys lets a reload add the next key before the
// old one goes). Its errors name the file (and the block, in a file of
// several) and the problem in one line: it cannot be read, holds no PEM
// block, holds no private key (a public key or a certificate), or a key of
// an unsupported algorithm.
func LoadFile(path string) ([]*Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already named
		}
		return nil, fmt.Errorf("card-signing-key %s: cannot read: %v", path, err)
	}
	var blocks []*pem.Block
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			break
		}
		blocks = append(blocks, block)
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("card-signing-key %s: no PEM block: want a PEM private key", path)
	}
	keys := make([]*Key, 0, len(blocks))
	for i, block := range blocks {
		where := path
		if len(blocks) > 1 {
			where = fmt.Sprintf("%s (PEM block %d)", path, i+1)
		}
		k, err := parseKey(where, block)
		if err != nil {
			return nil, err
		}
		k.File = path
		keys = append(keys, k)
	}
	return keys, nil
}

// parseKey reads one PEM block; where names it in errors.
func parseKey(path string, block *pem.Block) (*Key, error) {
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "PUBLIC KEY", "RSA PUBLIC KEY", "CERTIFICATE":
		return nil, fmt.Errorf("card-signing-key %s: holds a %s, not a private key", path, block.Type)
	default:
		return nil, fmt.Errorf("card-signing-key %s: PEM block %q is not a private key", path, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("card-signing-key %s: not a private key a2ad can read: %v", path, err)
	}
	k := &Key{}
	switch key := key.(type) {
	case *ecdsa.PrivateKey:
		switch key.Curve {
		case elliptic.P256():
			k.Alg = jose.ES256
		case elliptic.P384():
			k.Alg = jose.ES384
		case elliptic.P521():
			k.Alg = jose.ES512
		default:
			return nil, fmt.Errorf("card-signing-key %s: unsupported algorithm: ECDSA on %s (use P-256, P-384 or P-521)", path, key.Curve.Params().Name)
		}
		k.signer = key
	case *rsa.PrivateKey:
		if n := key.N.BitLen(); n < 2048 {
			return nil, fmt.Errorf("card-signing-key %s: unsupported algorithm: RSA of %d bits (RS256 needs 2048 at least)", path, n)
		}
		k.Alg, k.signer = jose.RS256, key
	case ed25519.PrivateKey:
		k.Alg, k.signer = jose.EdDSA, key
	default:
		return nil, fmt.Errorf("card-signing-key %s: unsupported algorithm: %T (use ECDSA, RSA or Ed25519)", path, key)
	}
	pub := jose.JSONWebKey{Key: k.signer.Public()}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("card-signing-key %s: thumbprint: %v", path, err)
	}
	k.KID = base64.RawURLEncoding.EncodeToString(tp)
	return k, nil
}

// LoadKeys reads every file with LoadFile, in order. The same key twice
// is refused: it would sign twice under one kid.
func LoadKeys(paths []string) ([]*Key, error) {
	var keys []*Key
	seen := map[string]string{}
	for _, p := range paths {
		ks, err := LoadFile(p)
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			if first, dup := seen[k.KID]; dup {
				return nil, fmt.Errorf("card-signing-key %s: holds the same key as %s (kid %s)", p, first, k.KID)
			}
			seen[k.KID] = p
			keys = append(keys, k)
		}
	}
	return keys, nil
}
