package cardsign

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/a2ad/a2ad/agentcard"
	"github.com/a2ad/a2ad/internal/jcs"
	"github.com/go-jose/go-jose/v4"
)

// Signature is an AgentCardSignature: a JWS in the flattened JSON form,
// its payload detached.
type Signature struct {
	Protected string         `json:"protected"`
	Signature string         `json:"signature"`
	Header    map[string]any `json:"header,omitempty"`
}

// Signer signs cards with a set of keys.
type Signer struct {
	keys []*Key
	jku  string
	jwks []byte
}

// New returns a Signer of keys whose JWKS is at jku (an absolute URL).
func New(keys []*Key, jku string) (*Signer, error) {
	if len(keys) == 0 {
		return nil, errors.New("card signing: no key")
	}
	set := jose.JSONWebKeySet{}
	for _, k := range keys {
		set.Keys = append(set.Keys, k.Public())
	}
	jwks, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("card signing: encode JWKS: %w", err)
	}
	return &Signer{keys: keys, jku: jku, jwks: jwks}, nil
}

// JWKS returns the JSON Web Key Set of the public keys.
func (s *Signer) JWKS() []byte { return s.jwks }

// Sign returns c with signatures on its JSON and its V1JSON. Its ETag
// names the unsigned card and the key ids, so that signing again (ECDSA
// signatures differ each time) keeps the ETag while content and keys stay.
func (s *Signer) Sign(c *agentcard.Card) (*agentcard.Card, error) {
	signed := *c
	var err error
	if signed.JSON, err = s.SignJSON(c.JSON); err != nil {
		return nil, err
	}
	if signed.V1JSON, err = s.SignJSON(c.V1JSON); err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write([]byte(c.ETag))
	for _, k := range s.keys {
		h.Write([]byte("\x00" + k.KID))
	}
	signed.ETag = `"` + hex.EncodeToString(h.Sum(nil)[:12]) + `"`
	return &signed, nil
}

// SignJSON returns the card doc (a JSON object without signatures) with
// a signatures member: per key, one signature over ServedPayload(doc) and
// one over ModelPayload(doc).
func (s *Signer) SignJSON(doc []byte) ([]byte, error) {
	var payloads [2][]byte
	var err error
	if payloads[0], err = ServedPayload(doc); err != nil {
		return nil, err
	}
	if payloads[1], err = ModelPayload(doc); err != nil {
		return nil, err
	}
	var sigs []Signature
	for _, p := range payloads {
		for _, k := range s.keys {
			sig, err := s.sign(k, p)
			if err != nil {
				return nil, err
			}
			sigs = append(sigs, sig)
		}
	}
	list, err := json.Marshal(sigs)
	if err != nil {
		return nil, fmt.Errorf("card signing: %w", err)
	}
	// Append the member after the last one, keeping the card's own order.
	body := bytes.TrimRight(doc, " \n")
	if len(body) < 2 || body[len(body)-1] != '}' {
		return nil, errors.New("card signing: the card is not a JSON object")
	}
	out := append([]byte{}, body[:len(body)-1]...)
	if len(bytes.TrimSpace(body[1:len(body)-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"signatures":`...)
	out = append(out, list...)
	return append(out, '}'), nil
}

func (s *Signer) sign(k *Key, payload []byte) (Signature, error) {
	opts := (&jose.SignerOptions{}).WithType("JOSE").WithHeader("jku", s.jku)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.Alg, Key: jose.JSONWebKey{Key: k.signer, KeyID: k.KID}}, opts)
	if err != nil {
		return Signature{}, fmt.Errorf("card signing with %s: %w", k.File, err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		return Signature{}, fmt.Errorf("card signing with %s: %w", k.File, err)
	}
	compact, err := obj.DetachedCompactSerialize()
	if err != nil {
		return Signature{}, fmt.Errorf("card signing with %s: %w", k.File, err)
	}
	protected, sig, _ := strings.Cut(compact, "..")
	return Signature{Protected: protected, Signature: sig}, nil
}

// ServedPayload is the RFC 8785 canonical form of the card doc without
// its signatures member: the served JSON as it is.
func ServedPayload(doc []byte) ([]byte, error) {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("card signing: %w", err)
	}
	delete(m, "signatures")
	return jcs.Append(nil, m)
}

// KeyIDs returns the kids of the keys, in signing order.
func (s *Signer) KeyIDs() []string {
	ids := make([]string, len(s.keys))
	for i, k := range s.keys {
		ids[i] = k.KID
	}
	return ids
}
