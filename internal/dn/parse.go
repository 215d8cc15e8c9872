package dn

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrOpenSSLDefault is Parse's error for a name written as openssl prints
// it by default ("CN = partner-a, O = Acme"): that form lists the RDNs in
// the reverse order of RFC 4514, so reading it as one would name another
// subject.
var ErrOpenSSLDefault = errors.New(`this is openssl's default form, whose RDNs are in the other order: copy what openssl x509 -noout -subject -nameopt RFC2253 prints`)

// Parse reads s as RFC 4514 writes a distinguished name (the last RDN
// first), strictly: no spaces around "=", ",", "+", and the characters
// `"+,;<>\`, a leading space or "#" and a trailing space escaped with "\"
// (or as a hex pair, "\2C"). A leading "subject=", as openssl prints, is
// left out. Types are names (CN, O, OU, C, L, ST, STREET, DC, UID,
// serialNumber, emailAddress and a few more; case does not matter) or
// dotted OIDs; a value "#" and hex is the value's DER encoding.
func Parse(s string) (Name, error) {
	s = strings.TrimPrefix(s, "subject=")
	if strings.Contains(s, " = ") {
		return nil, ErrOpenSSLDefault
	}
	if s == "" {
		return nil, errors.New("no attribute")
	}
	p := parser{s: s}
	var rev Name
	for {
		r, err := p.rdn()
		if err != nil {
			return nil, err
		}
		rev = append(rev, sortRDN(r))
		if p.i == len(s) {
			break
		}
		p.i++ // the comma rdn stopped at
	}
	n := make(Name, len(rev))
	for i, r := range rev {
		n[len(rev)-1-i] = r
	}
	return n, nil
}

type parser struct {
	s string
	i int
}

// rdn reads attributes joined by "+", up to a "," or the end.
func (p *parser) rdn() (RDN, error) {
	var r RDN
	for {
		a, err := p.attr()
		if err != nil {
			return nil, err
		}
		r = append(r, a)
		if p.i == len(p.s) || p.s[p.i] == ',' {
			return r, nil
		}
		p.i++ // '+'
	}
}

func (p *parser) attr() (Attr, error) {
	eq := strings.IndexByte(p.s[p.i:], '=')
	if eq < 0 {
		return Attr{}, fmt.Errorf("%q has no \"=\"", p.rest())
	}
	typ := p.s[p.i : p.i+eq]
	oid, err := typeOID(typ)
	if err != nil {
		return Attr{}, err
	}
	p.i += eq + 1
	if p.i < len(p.s) && p.s[p.i] == '#' {
		return p.hexValue(oid)
	}
	v, err := p.value()
	if err != nil {
		return Attr{}, fmt.Errorf("the value of %s: %w", typ, err)
	}
	return Attr{OID: oid, Value: v}, nil
}

func (p *parser) rest() string {
	if len(p.s)-p.i > 40 {
		return p.s[p.i:p.i+40] + "…"
	}
	return p.s[p.i:]
}

// typeOID reads an attribute type: a name or a dotted OID.
func typeOID(t string) (string, error) {
	if t == "" {
		return "", errors.New("an attribute has no type")
	}
	if t[0] >= '0' && t[0] <= '9' {
		for _, part := range strings.Split(t, ".") {
			if part == "" || strings.Trim(part, "0123456789") != "" || (len(part) > 1 && part[0] == '0') {
				return "", fmt.Errorf("attribute type %q is neither a name nor an OID", t)
			}
		}
		if !strings.Contains(t, ".") {
			return "", fmt.Errorf("attribute type %q is neither a name nor an OID", t)
		}
		return t, nil
	}
	oid, ok := oidOf(t)
	if !ok {
		return "", fmt.Errorf("unknown attribute type %q (write it as its OID, e.g. 2.5.4.3 for CN)", t)
	}
	return oid, nil
}

// value reads a string value up to an unescaped "," or "+".
func (p *parser) value() (string, error) {
	var b []byte
	start := p.i
	lastEscaped := false
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == ',' || c == '+':
			return finish(b, lastEscaped)
		case c == '\\':
			e, n, err := unescape(p.s[p.i+1:])
			if err != nil {
				return "", err
			}
			b = append(b, e)
			p.i += 1 + n
			lastEscaped = true
			continue
		case strings.IndexByte(`";<>`, c) >= 0 || c == 0:
			return "", fmt.Errorf("%q must be escaped (\\%c)", c, c)
		case c == ' ' && p.i == start:
			return "", errors.New(`a leading space must be escaped ("\ ")`)
		}
		b = append(b, c)
		lastEscaped = false
		p.i++
	}
	return finish(b, lastEscaped)
}

func finish(b []byte, lastEscaped bool) (string, error) {
	if len(b) > 0 && b[len(b)-1] == ' ' && !lastEscaped {
		return "", errors.New(`a trailing space must be escaped ("\ "); spaces after "," or "+" are not allowed`)
	}
	if !utf8.Valid(b) {
		return "", errors.New("its escaped bytes are not UTF-8")
	}
	return string(b), nil
}

// unescape reads what follows a backslash: a special character or a hex
// pair, and returns the byte and how many characters it took.
func unescape(s string) (byte, int, error) {
	if s == "" {
		return 0, 0, errors.New(`it ends with "\"`)
	}
	if strings.IndexByte(`\"+,;<> #=`, s[0]) >= 0 {
		return s[0], 1, nil
	}
	if len(s) >= 2 {
		if d, err := hex.DecodeString(s[:2]); err == nil {
			return d[0], 2, nil
		}
	}
	return 0, 0, fmt.Errorf(`"\%c" is neither an escaped special character nor a hex pair`, s[0])
}

// hexValue reads "#" and the hex of a value's DER encoding; a string type
// reads as its text, so that it matches however it is written.
func (p *parser) hexValue(oid string) (Attr, error) {
	end := strings.IndexAny(p.s[p.i:], ",+")
	if end < 0 {
		end = len(p.s) - p.i
	}
	h := p.s[p.i+1 : p.i+end]
	der, err := hex.DecodeString(h)
	if err != nil || len(der) == 0 {
		return Attr{}, fmt.Errorf("value #%s is not hex", h)
	}
	var v asn1.RawValue
	if rest, err := asn1.Unmarshal(der, &v); err != nil || len(rest) > 0 {
		return Attr{}, fmt.Errorf("value #%s is not one DER-encoded value", h)
	}
	p.i += end
	return valueOf(oid, v), nil
}
