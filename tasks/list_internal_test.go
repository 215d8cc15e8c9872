package tasks

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPageTokenRoundTripsAnyID(t *testing.T) {
	d := queryDigest("alice", ListFilter{})
	var all []byte
	for b := range 256 {
		all = append(all, byte(b))
	}
	ids := []string{"t", "_", "a_b_c", "2026-03-01T12:00:00Z_x", string(all), strings.Repeat("\xff", 300), "\x00"}
	for b := range 256 {
		ids = append(ids, string([]byte{byte(b)}), "id"+string([]byte{byte(b)})+"tail")
	}
	for _, id := range ids {
		for _, at := range []uint64{0, 1, 1 << 62, 1<<63 - 1, ^uint64(0)} {
			c := Cursor{At: at, TaskID: id}
			tok := encodePageToken(c, d)
			if strings.ContainsAny(tok, "+/=") {
				t.Fatalf("token %q is not unpadded base64url", tok)
			}
			got, err := decodePageToken(tok, d)
			if err != nil || got != c {
				t.Fatalf("decode(encode(%+v)) = %+v, %v", c, got, err)
			}
		}
	}
}

func TestPageTokenRejections(t *testing.T) {
	d := queryDigest("alice", ListFilter{})
	good := encodePageToken(Cursor{At: 42, TaskID: "task-12"}, d) // 25 bytes: padded in base64
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	enc := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	with := func(i int, v byte) []byte { b := append([]byte(nil), raw...); b[i] = v; return b }
	malformed := map[string]string{
		"not base64":             "!!!!",
		"padded":                 base64.URLEncoding.EncodeToString(raw),
		"standard alphabet":      strings.NewReplacer("-", "+", "_", "/").Replace(enc(append(raw, 0xfb, 0xff))),
		"empty after decode":     enc(nil),
		"version 0":              enc(with(0, 0)),
		"version 2":              enc(with(0, 2)),
		"truncated header":       enc(raw[:16]),
		"no id":                  enc(append(raw[:17:17], 0)),
		"id shorter":             enc(raw[:len(raw)-1]),
		"id longer":              enc(append(raw, 'x')),
		"length overflow":        enc(append(raw[:17:17], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)),
		"non-minimal length":     enc(append(append(raw[:17:17], 0x87, 0x00), "task-12"...)),
		"last character changed": good[:len(good)-1] + string(good[len(good)-1]+1),
	}
	for name, tok := range malformed {
		if _, err := decodePageToken(tok, d); !errors.Is(err, ErrPageToken) {
			t.Errorf("%s (%q): err = %v, want ErrPageToken", name, tok, err)
		}
	}
	others := map[string][8]byte{
		"another caller":   queryDigest("bob", ListFilter{}),
		"a context":        queryDigest("alice", ListFilter{ContextID: "c"}),
		"a state":          queryDigest("alice", ListFilter{State: "working"}),
		"a time":           queryDigest("alice", ListFilter{StatusAfter: time.Unix(0, 0)}),
		"a time before 70": queryDigest("alice", ListFilter{StatusAfter: time.Unix(-1, 0)}),
	}
	for name, other := range others {
		if other == d {
			t.Fatalf("%s: same digest as no filter", name)
		}
		if _, err := decodePageToken(good, other); !errors.Is(err, ErrPageTokenQuery) {
			t.Errorf("token used with %s: err = %v, want ErrPageTokenQuery", name, err)
		}
	}
	// Length-prefixed fields: moving a byte from one field to the next is
	// another query.
	if queryDigest("ab", ListFilter{ContextID: "c"}) == queryDigest("a", ListFilter{ContextID: "bc"}) {
		t.Fatal("digest does not separate the owner from the context")
	}
}

func FuzzPageToken(f *testing.F) {
	d := queryDigest("alice", ListFilter{})
	f.Add(encodePageToken(Cursor{At: 1, TaskID: "a"}, d))
	f.Add(encodePageToken(Cursor{At: 1 << 60, TaskID: "a_b\x00\xff"}, d))
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := decodePageToken(tok, d)
		if err != nil {
			if !errors.Is(err, ErrPageToken) && !errors.Is(err, ErrPageTokenQuery) {
				t.Fatalf("decode %q: unexpected error %v", tok, err)
			}
			return
		}
		if again := encodePageToken(c, d); again != tok {
			t.Fatalf("decode %q then encode = %q", tok, again)
		}
	})
}
