package transport_test

import (
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/a2ad/a2ad/transport"
)

func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}
	tests := []struct {
		name    string
		peer    string
		headers [][2]string
		want    string
	}{
		{"untrusted peer", "192.0.2.9:5000", nil, "192.0.2.9"},
		{"untrusted peer's XFF is ignored", "192.0.2.9:5000", [][2]string{{"X-Forwarded-For", "198.51.100.1"}}, "192.0.2.9"},
		{"untrusted peer's Forwarded is ignored", "192.0.2.9:5000", [][2]string{{"Forwarded", "for=198.51.100.1"}}, "192.0.2.9"},
		{"IPv4-mapped peer", "[::ffff:192.0.2.9]:5000", nil, "192.0.2.9"},
		{"IPv6 peer with a zone", "[fe80::1%eth0]:5000", nil, "fe80::1"},
		{"trusted peer without headers", "10.0.0.1:5000", nil, "10.0.0.1"},
		{"trusted peer, XFF", "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "198.51.100.1"}}, "198.51.100.1"},
		{"the client's forged entries count for nothing", "10.0.0.1:5000",
			[][2]string{{"X-Forwarded-For", "203.0.113.7, 198.51.100.1"}}, "198.51.100.1"},
		{"trusted hops are skipped", "10.0.0.1:5000",
			[][2]string{{"X-Forwarded-For", "203.0.113.7, 198.51.100.1, 10.1.1.1, 10.2.2.2"}}, "198.51.100.1"},
		{"several XFF headers are one list", "10.0.0.1:5000",
			[][2]string{{"X-Forwarded-For", "203.0.113.7"}, {"X-Forwarded-For", "198.51.100.1, 10.1.1.1"}}, "198.51.100.1"},
		{"ports and brackets", "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "[2001:db8::5]:443"}}, "2001:db8::5"},
		{"an address with a port", "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "198.51.100.1:443"}}, "198.51.100.1"},
		{"garbage stops at the nearest trusted hop", "10.0.0.1:5000",
			[][2]string{{"X-Forwarded-For", "198.51.100.1, garbage, 10.9.9.9"}}, "10.9.9.9"},
		{"every hop trusted: the leftmost", "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "10.3.3.3, 10.2.2.2"}}, "10.3.3.3"},
		{"empty elements are skipped", "10.0.0.1:5000", [][2]string{{"X-Forwarded-For", "198.51.100.1, ,"}}, "198.51.100.1"},
		{"Forwarded", "10.0.0.1:5000", [][2]string{{"Forwarded", `for=203.0.113.7, for=198.51.100.1;proto=https;by=10.0.0.1`}}, "198.51.100.1"},
		{"Forwarded, quoted IPv6 with a port", "10.0.0.1:5000", [][2]string{{"Forwarded", `For="[2001:db8:cafe::17]:4711"`}}, "2001:db8:cafe::17"},
		{"Forwarded, trusted IPv6 hop", "10.0.0.1:5000",
			[][2]string{{"Forwarded", `for=198.51.100.1, for="[2001:db8:ffff::1]"`}}, "198.51.100.1"},
		{"Forwarded, a quoted comma does not split", "10.0.0.1:5000",
			[][2]string{{"Forwarded", `for=198.51.100.1;ext="a,for=203.0.113.7"`}}, "198.51.100.1"},
		{"Forwarded, unknown", "10.0.0.1:5000", [][2]string{{"Forwarded", `for=198.51.100.1, for=unknown`}}, "10.0.0.1"},
		{"Forwarded, obfuscated", "10.0.0.1:5000", [][2]string{{"Forwarded", `for=_hidden`}}, "10.0.0.1"},
		{"Forwarded, an element without for", "10.0.0.1:5000", [][2]string{{"Forwarded", `for=198.51.100.1, proto=https`}}, "10.0.0.1"},
		{"both headers agree", "10.0.0.1:5000",
			[][2]string{{"X-Forwarded-For", "198.51.100.1"}, {"Forwarded", "for=198.51.100.1"}}, "198.51.100.1"},
		{"both headers disagree: the proxy", "10.0.0.1:5000",
			[][2]string{{"X-Forwarded-For", "198.51.100.1"}, {"Forwarded", "for=203.0.113.7"}}, "10.0.0.1"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "/a2a", nil)
		r.RemoteAddr = tt.peer
		for _, h := range tt.headers {
			r.Header.Add(h[0], h[1])
		}
		if got := transport.ClientAddr(r, trusted); got != tt.want {
			t.Errorf("%s: ClientAddr = %q, want %q", tt.name, got, tt.want)
		}
	}
	// Without trusted proxies the headers never count.
	r := httptest.NewRequest("POST", "/a2a", nil)
	r.RemoteAddr = "10.0.0.1:5000"
	r.Header.Set("X-Forwarded-For", "198.51.100.1")
	if got := transport.ClientAddr(r, nil); got != "10.0.0.1" {
		t.Errorf("no trusted proxies: ClientAddr = %q, want the peer", got)
	}
}

func FuzzClientAddr(f *testing.F) {
	f.Add("198.51.100.1, 10.0.0.2", `for=198.51.100.1;proto=https, for="[2001:db8::1]:80"`)
	f.Add(`"`, `for="\`)
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	f.Fuzz(func(t *testing.T, xff, fwd string) {
		r := httptest.NewRequest("POST", "/a2a", nil)
		r.RemoteAddr = "10.0.0.1:5000"
		r.Header.Set("X-Forwarded-For", xff)
		r.Header.Set("Forwarded", fwd)
		got := transport.ClientAddr(r, trusted)
		if _, err := netip.ParseAddr(got); err != nil {
			t.Fatalf("ClientAddr = %q, not an address", got)
		}
	})
}

func BenchmarkClientAddr(b *testing.B) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	direct := httptest.NewRequest("POST", "/a2a", nil)
	direct.RemoteAddr = "192.0.2.9:5000"
	proxied := httptest.NewRequest("POST", "/a2a", nil)
	proxied.RemoteAddr = "10.0.0.1:5000"
	proxied.Header.Set("X-Forwarded-For", "203.0.113.7, 198.51.100.1")
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			transport.ClientAddr(direct, trusted)
		}
	})
	b.Run("proxied", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			transport.ClientAddr(proxied, trusted)
		}
	})
}
