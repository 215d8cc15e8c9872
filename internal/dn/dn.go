// Package dn reads and writes X.509 distinguished names as RFC 4514 writes
// them, keeping their structure: the order of the RDNs and which
// attributes share one (multi-valued) RDN. Go's pkix.Name.String re-sorts
// the standard attributes and merges RDNs, so two different subjects can
// print the same; a Name compares as encoded.
//
// A Name's String is its canonical form: two Names are the same subject
// if and only if their Strings are equal. It is the form `openssl x509
// -noout -subject -nameopt RFC2253` prints (last RDN first), except that
// characters outside ASCII are written as themselves rather than as
// escaped UTF-8 bytes, and the attributes of a multi-valued RDN are
// sorted; Parse reads either.
package dn

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Attr is one attribute of an RDN: its type's OID in dotted form and its
// value. A value of a string type is its text; any other is Raw, its DER
// encoding.
type Attr struct {
	OID   string
	Value string
	Raw   bool
}

// RDN is a relative distinguished name: one attribute, or several (a
// multi-valued RDN, written with "+"), sorted.
type RDN []Attr

// Name is a distinguished name: its RDNs in the order they are encoded
// (the reverse of the order RFC 4514 writes them).
type Name []RDN

// names maps attribute type OIDs to the names Parse reads and String
// writes: RFC 4514's, then the ones openssl prints. Parse also reads
// aliases (case does not matter), and any type as a dotted OID.
var names = []struct{ oid, name string }{
	{"2.5.4.3", "CN"},
	{"2.5.4.7", "L"},
	{"2.5.4.8", "ST"},
	{"2.5.4.10", "O"},
	{"2.5.4.11", "OU"},
	{"2.5.4.6", "C"},
	{"2.5.4.9", "STREET"},
	{"0.9.2342.19200300.100.1.25", "DC"},
	{"0.9.2342.19200300.100.1.1", "UID"},
	{"2.5.4.5", "serialNumber"},
	{"2.5.4.4", "SN"},
	{"2.5.4.42", "GN"},
	{"2.5.4.12", "title"},
	{"2.5.4.17", "postalCode"},
	{"2.5.4.46", "dnQualifier"},
	{"2.5.4.65", "pseudonym"},
	{"2.5.4.15", "businessCategory"},
	{"1.2.840.113549.1.9.1", "emailAddress"},
}

var aliases = map[string]string{"surname": "2.5.4.4", "givenname": "2.5.4.42", "email": "1.2.840.113549.1.9.1"}

func oidOf(name string) (string, bool) {
	for _, n := range names {
		if strings.EqualFold(n.name, name) {
			return n.oid, true
		}
	}
	oid, ok := aliases[strings.ToLower(name)]
	return oid, ok
}

func nameOf(oid string) string {
	for _, n := range names {
		if n.oid == oid {
			return n.name
		}
	}
	return oid
}

// MultiValued reports whether an RDN of n has more than one attribute.
func (n Name) MultiValued() bool {
	return slices.ContainsFunc(n, func(r RDN) bool { return len(r) > 1 })
}

// String writes n as RFC 4514 does: the last RDN first, "," between RDNs
// and "+" between the attributes of one.
func (n Name) String() string {
	var b strings.Builder
	for i := len(n) - 1; i >= 0; i-- {
		if i != len(n)-1 {
			b.WriteByte(',')
		}
		for j, a := range n[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			b.WriteString(nameOf(a.OID))
			b.WriteByte('=')
			if a.Raw {
				b.WriteByte('#')
				b.WriteString(hex.EncodeToString([]byte(a.Value)))
				continue
			}
			writeValue(&b, a.Value)
		}
	}
	return b.String()
}

// writeValue escapes what RFC 4514 section 2.4 says to, and control
// characters as hex pairs.
func writeValue(b *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case strings.IndexByte(`"+,;<>\`, c) >= 0,
			i == 0 && (c == ' ' || c == '#'),
			i == len(v)-1 && c == ' ':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(b, `\%02X`, c)
		default:
			b.WriteByte(c)
		}
	}
}

// attr and rdnSET are the ASN.1 shapes of a Name (the suffix SET makes
// encoding/asn1 read a SET OF).
type attr struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

type rdnSET []attr

// FromDER reads a DER-encoded name, such as a certificate's RawSubject.
func FromDER(der []byte) (Name, error) {
	var seq []rdnSET
	rest, err := asn1.Unmarshal(der, &seq)
	if err != nil {
		return nil, fmt.Errorf("distinguished name: %w", err)
	}
	if len(rest) > 0 {
		return nil, errors.New("distinguished name: trailing data")
	}
	n := make(Name, 0, len(seq))
	for _, set := range seq {
		if len(set) == 0 {
			return nil, errors.New("distinguished name: an empty RDN")
		}
		r := make(RDN, 0, len(set))
		for _, a := range set {
			r = append(r, valueOf(a.Type.String(), a.Value))
		}
		n = append(n, sortRDN(r))
	}
	return n, nil
}

// valueOf decodes the ASN.1 string types; any other value stays raw.
func valueOf(oid string, v asn1.RawValue) Attr {
	if v.Class == asn1.ClassUniversal && !v.IsCompound {
		var s string
		ok := true
		switch v.Tag {
		case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagNumericString:
			s, ok = string(v.Bytes), utf8.Valid(v.Bytes)
		case asn1.TagT61String: // as openssl reads it: Latin-1
			r := make([]rune, len(v.Bytes))
			for i, c := range v.Bytes {
				r[i] = rune(c)
			}
			s = string(r)
		case asn1.TagBMPString:
			if ok = len(v.Bytes)%2 == 0; ok {
				u := make([]uint16, len(v.Bytes)/2)
				for i := range u {
					u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
				}
				s = string(utf16.Decode(u))
			}
		default:
			ok = false
		}
		if ok {
			return Attr{OID: oid, Value: s}
		}
	}
	return Attr{OID: oid, Value: string(v.FullBytes), Raw: true}
}

func sortRDN(r RDN) RDN {
	slices.SortFunc(r, func(a, b Attr) int {
		if c := strings.Compare(a.OID, b.OID); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
	return r
}
