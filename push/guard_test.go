package push_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2ad/a2ad/push"
)

// guardResolver is a fake push.Resolver; it never touches the network.
type guardResolver struct {
	lookup func(ctx context.Context, host string) ([]net.IPAddr, error)
	calls  atomic.Int64
}

func (r *guardResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	r.calls.Add(1)
	return r.lookup(ctx, host)
}

// guardHosts returns a fake resolver answering from hosts (name to
// addresses); any other name fails as a DNS "no such host" would.
func guardHosts(hosts map[string][]string) *guardResolver {
	return &guardResolver{lookup: func(ctx context.Context, host string) ([]net.IPAddr, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ips, ok := hosts[strings.ToLower(strings.TrimSuffix(host, "."))]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var out []net.IPAddr
		for _, s := range ips {
			out = append(out, net.IPAddr{IP: net.ParseIP(s)})
		}
		return out, nil
	}}
}

// guardCheckReason runs g.Check and returns "" if it passes or the Reason of
// the *push.RefusedError; any other error fails the test.
func guardCheckReason(tb testing.TB, g *push.Guard, rawURL string) string {
	tb.Helper()
	err := g.Check(context.Background(), rawURL)
	if err == nil {
		return ""
	}
	var refused *push.RefusedError
	if !errors.As(err, &refused) {
		tb.Fatalf("Check(%q) = %v (%T), want nil or *RefusedError", rawURL, err, err)
	}
	return refused.Reason
}

func TestGuardCheck(t *testing.T) {
	res := guardHosts(map[string][]string{
		"public.example":   {"93.184.216.34"},
		"public6.example":  {"2606:4700:4700::1111", "93.184.216.34"},
		"private.example":  {"10.0.0.5"},
		"internal.example": {"10.0.0.5"},
		"mixed.example":    {"93.184.216.34", "10.0.0.5"},
		"mixed6.example":   {"2606:4700:4700::1111", "fd00::1"},
		"loopback.example": {"127.0.0.1"},
		"localhost":        {"127.0.0.1", "::1"},
		"mapped.example":   {"::ffff:127.0.0.1"},
		"metadata.example": {"169.254.169.254"},
		"cgnat.example":    {"100.64.1.2"},
		"ula.example":      {"fd12:3456::1"},
		"empty.example":    {},
	})
	g := &push.Guard{Resolver: res}

	tests := []struct {
		url  string
		want string // Reason, or "" if allowed
	}{
		// Public literals and names.
		{"http://93.184.216.34/hook", ""},
		{"https://93.184.216.34:8443/hook?x=1", ""},
		{"HTTPS://93.184.216.34/", ""},
		{"https://[2606:4700:4700::1111]/hook", ""},
		{"http://172.32.0.1/", ""},
		{"http://100.128.0.1/", ""},
		{"https://public.example/hook", ""},
		{"https://public6.example/hook", ""},
		{"https://PUBLIC.example./hook", ""},

		// Loopback.
		{"http://127.0.0.1/", `webhook host "127.0.0.1" is a loopback address`},
		{"http://127.1.2.3:8080/hook", `webhook host "127.1.2.3" is a loopback address`},
		{"http://[::1]/", `webhook host "::1" is a loopback address`},
		{"http://[::ffff:127.0.0.1]/", `webhook host "::ffff:127.0.0.1" is a loopback address`},
		{"http://loopback.example/", `webhook host "loopback.example" resolves to a loopback address (127.0.0.1)`},
		{"http://localhost:9000/", `webhook host "localhost" resolves to a loopback address (127.0.0.1)`},
		{"http://mapped.example/", `webhook host "mapped.example" resolves to a loopback address (127.0.0.1)`},

		// Private.
		{"http://10.0.0.1/", `webhook host "10.0.0.1" is a private address`},
		{"http://172.16.5.4/", `webhook host "172.16.5.4" is a private address`},
		{"http://172.31.255.255/", `webhook host "172.31.255.255" is a private address`},
		{"http://192.168.1.1/", `webhook host "192.168.1.1" is a private address`},
		{"http://[fc00::1]/", `webhook host "fc00::1" is a private address`},
		{"http://[fd12:3456::1]/", `webhook host "fd12:3456::1" is a private address`},
		{"http://[::ffff:10.0.0.1]/", `webhook host "::ffff:10.0.0.1" is a private address`},
		{"http://private.example/", `webhook host "private.example" resolves to a private address (10.0.0.5)`},
		{"http://internal.example/", `webhook host "internal.example" resolves to a private address (10.0.0.5)`},
		{"http://ula.example/", `webhook host "ula.example" resolves to a private address (fd12:3456::1)`},
		{"http://mixed.example/", `webhook host "mixed.example" resolves to a private address (10.0.0.5)`},
		{"http://mixed6.example/", `webhook host "mixed6.example" resolves to a private address (fd00::1)`},

		// Link-local.
		{"http://169.254.169.254/latest/meta-data/", `webhook host "169.254.169.254" is a link-local address`},
		{"http://169.254.1.1/", `webhook host "169.254.1.1" is a link-local address`},
		{"http://[fe80::1]/", `webhook host "fe80::1" is a link-local address`},
		{"http://[fe80::1%25eth0]/", `webhook host "fe80::1%eth0" is a link-local address`},
		{"http://metadata.example/", `webhook host "metadata.example" resolves to a link-local address (169.254.169.254)`},

		// Multicast, unspecified, broadcast and the rest.
		{"http://224.0.0.1/", `webhook host "224.0.0.1" is a multicast address`},
		{"http://239.255.255.250/", `webhook host "239.255.255.250" is a multicast address`},
		{"http://[ff02::1]/", `webhook host "ff02::1" is a multicast address`},
		{"http://0.0.0.0/", `webhook host "0.0.0.0" is an unspecified address`},
		{"http://[::]/", `webhook host "::" is an unspecified address`},
		{"http://0.1.2.3/", `webhook host "0.1.2.3" is a reserved address`},
		{"http://255.255.255.255/", `webhook host "255.255.255.255" is a broadcast address`},
		{"http://240.0.0.1/", `webhook host "240.0.0.1" is a reserved address`},
		{"http://100.64.0.1/", `webhook host "100.64.0.1" is a shared (carrier-grade NAT) address`},
		{"http://100.127.255.255/", `webhook host "100.127.255.255" is a shared (carrier-grade NAT) address`},
		{"http://cgnat.example/", `webhook host "cgnat.example" resolves to a shared (carrier-grade NAT) address (100.64.1.2)`},
		{"http://192.0.2.1/", `webhook host "192.0.2.1" is a documentation address`},
		{"http://203.0.113.9/", `webhook host "203.0.113.9" is a documentation address`},
		{"http://198.18.0.1/", `webhook host "198.18.0.1" is a benchmarking address`},
		{"http://[2001:db8::1]/", `webhook host "2001:db8::1" is a documentation address`},
		{"http://[64:ff9b::a00:1]/", `webhook host "64:ff9b::a00:1" is a NAT64 address`},
		{"http://[2001::1]/", `webhook host "2001::1" is a reserved address`},
		{"http://[2002:7f00:1::1]/", `webhook host "2002:7f00:1::1" is a 6to4 address`},
		{"http://[fec0::1]/", `webhook host "fec0::1" is a site-local address`},
		{"http://[::7f00:1]/", `webhook host "::7f00:1" is a reserved address`},

		// Hosts that are neither addresses nor names; resolution errors.
		{"http://127.1/", `webhook host "127.1" is not a valid host name`},
		{"http://2130706433/", `webhook host "2130706433" is not a valid host name`},
		{"http://nx.example/", `webhook host "nx.example" could not be resolved`},
		{"http://empty.example/", `webhook host "empty.example" could not be resolved`},

		// Scheme, shape and credentials.
		{"ftp://93.184.216.34/", "webhook URL must use http or https"},
		{"file:///etc/passwd", "webhook URL must use http or https"},
		{"93.184.216.34/hook", "webhook URL must use http or https"},
		{"//93.184.216.34/hook", "webhook URL must use http or https"},
		{"", "webhook URL must use http or https"},
		{"http:///hook", "webhook URL must be absolute and name a host"},
		{"http:hook", "webhook URL must be absolute and name a host"},
		{"http://user:secret@93.184.216.34/", "webhook URL must not contain credentials"},
		{"https://token@public.example/", "webhook URL must not contain credentials"},
		{"http://%zz/", "webhook URL is malformed"},
	}
	for _, tt := range tests {
		if got := guardCheckReason(t, g, tt.url); got != tt.want {
			t.Errorf("Check(%q) refused with %q, want %q", tt.url, got, tt.want)
		}
	}
}

func TestGuardCheckResolverError(t *testing.T) {
	dnsErr := &net.DNSError{Err: "server misbehaving", Name: "flaky.example", IsTemporary: true}
	g := &push.Guard{Resolver: &guardResolver{lookup: func(context.Context, string) ([]net.IPAddr, error) {
		return nil, dnsErr
	}}}
	err := g.Check(context.Background(), "https://flaky.example/hook")
	var refused *push.RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("Check = %v, want *RefusedError", err)
	}
	if want := `webhook host "flaky.example" could not be resolved`; refused.Reason != want {
		t.Errorf("Reason = %q, want %q", refused.Reason, want)
	}
	if !errors.Is(err, dnsErr) {
		t.Errorf("Check = %v, want it to wrap the resolver's error", err)
	}
}

func TestGuardCheckCanceled(t *testing.T) {
	g := &push.Guard{Resolver: guardHosts(map[string][]string{"public.example": {"93.184.216.34"}})}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := g.Check(ctx, "https://public.example/hook")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Check(canceled ctx) = %v, want context.Canceled", err)
	}
	var refused *push.RefusedError
	if errors.As(err, &refused) {
		t.Errorf("Check(canceled ctx) = %v, want no *RefusedError", err)
	}
}

func TestGuardCheckAllow(t *testing.T) {
	res := guardHosts(map[string][]string{
		"other.internal.example": {"10.9.9.9"},
		"team.internal.example":  {"10.1.5.5"},
		"partly.internal":        {"10.1.5.5", "10.9.9.9"},
	})
	g, err := push.NewGuard([]string{"127.0.0.1/32", "Hooks.Internal.Example", "10.1.0.0/16", "::1/128", " fd00::/8 "}, res)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url  string
		want string
	}{
		{"http://127.0.0.1:8080/hook", ""},
		{"http://[::ffff:127.0.0.1]:8080/hook", ""},
		{"http://127.0.0.2/", `webhook host "127.0.0.2" is a loopback address`},
		{"http://[::1]/", ""},
		{"http://10.1.2.3/", ""},
		{"http://10.2.0.1/", `webhook host "10.2.0.1" is a private address`},
		{"http://[fd00::1]/", ""},
		{"http://[fc00::1]/", `webhook host "fc00::1" is a private address`},
		// The allowed name is not resolved (the fake does not know it).
		{"https://hooks.internal.example/a2a", ""},
		{"https://HOOKS.internal.example./a2a", ""},
		{"https://other.internal.example/", `webhook host "other.internal.example" resolves to a private address (10.9.9.9)`},
		// A name resolving inside an allowed CIDR passes; one address outside does not.
		{"https://team.internal.example/", ""},
		{"https://partly.internal/", `webhook host "partly.internal" resolves to a private address (10.9.9.9)`},
		// The allowlist opens destinations, not schemes or credentials.
		{"ftp://127.0.0.1/", "webhook URL must use http or https"},
		{"http://u:p@127.0.0.1/", "webhook URL must not contain credentials"},
	}
	for _, tt := range tests {
		if got := guardCheckReason(t, g, tt.url); got != tt.want {
			t.Errorf("Check(%q) refused with %q, want %q", tt.url, got, tt.want)
		}
	}
	if n := res.calls.Load(); n != 3 {
		t.Errorf("resolver called %d times, want 3 (once per non-allowed name, never for the allowed one)", n)
	}
}

func TestGuardNewGuard(t *testing.T) {
	valid := []string{
		"127.0.0.1/32", "10.1.0.0/16", "10.1.2.3/16", "::1/128", "fd00::/8", "::ffff:10.0.0.0/104",
		"127.0.0.1", "::1", "hooks.internal.example", "HOOKS.Internal.Example.", "localhost", "svc_a.internal",
	}
	if _, err := push.NewGuard(valid, nil); err != nil {
		t.Errorf("NewGuard(%q) = %v, want nil", valid, err)
	}
	if _, err := push.NewGuard(nil, nil); err != nil {
		t.Errorf("NewGuard(nil) = %v, want nil", err)
	}
	invalid := []string{
		"", " ", "10.0.0.0/33", "10.0.0.0/8/1", "256.1.1.1", "127.1", "not a host", "http://x.example",
		"x.example:80", "-bad.example", "bad-.example", "a..b", "*.example", "fe80::1%eth0", "héllo.example",
		strings.Repeat("a", 64) + ".example",
	}
	for _, entry := range invalid {
		_, err := push.NewGuard([]string{"127.0.0.1/32", entry}, nil)
		want := fmt.Sprintf("allow entry %q is neither a CIDR nor a host name", entry)
		if err == nil || err.Error() != want {
			t.Errorf("NewGuard(%q) = %v, want %q", entry, err, want)
		}
	}
}

func TestGuardCheckInvalidAllowLiteral(t *testing.T) {
	g := &push.Guard{Allow: []string{"10.0.0.0/33"}}
	err := g.Check(context.Background(), "http://93.184.216.34/")
	var refused *push.RefusedError
	if err == nil || errors.As(err, &refused) {
		t.Errorf("Check with invalid Allow = %v, want a configuration error", err)
	}
}

// guardServer starts a loopback test server that counts its requests.
func guardServer(tb testing.TB, h http.HandlerFunc) (srv *httptest.Server, hits *atomic.Int64) {
	tb.Helper()
	hits = new(atomic.Int64)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	tb.Cleanup(srv.Close)
	return srv, hits
}

func guardClient(tb testing.TB, g *push.Guard) *http.Client {
	tb.Helper()
	c := g.Client(5 * time.Second)
	tb.Cleanup(c.CloseIdleConnections)
	return c
}

func guardNoContent(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

func TestGuardClientRefusesLoopback(t *testing.T) {
	srv, hits := guardServer(t, guardNoContent)
	c := guardClient(t, &push.Guard{})
	resp, err := c.Post(srv.URL+"/hook", "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("Post(%s) = %s, want a refusal", srv.URL, resp.Status)
	}
	var refused *push.RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("Post = %v, want *RefusedError", err)
	}
	if want := `webhook host "127.0.0.1" is a loopback address`; refused.Reason != want {
		t.Errorf("Reason = %q, want %q", refused.Reason, want)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server got %d requests, want 0", n)
	}
}

func TestGuardClientAllowed(t *testing.T) {
	srv, hits := guardServer(t, guardNoContent)
	g, err := push.NewGuard([]string{"127.0.0.1/32"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Check(context.Background(), srv.URL+"/hook"); err != nil {
		t.Fatalf("Check(%s) = %v", srv.URL, err)
	}
	resp, err := guardClient(t, g).Post(srv.URL+"/hook", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("Post = %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || hits.Load() != 1 {
		t.Errorf("Post = %s with %d requests served, want 204 with 1", resp.Status, hits.Load())
	}
}

func TestGuardClientAllowedHostName(t *testing.T) {
	var gotHost atomic.Value
	srv, _ := guardServer(t, func(w http.ResponseWriter, r *http.Request) {
		gotHost.Store(r.Host)
		w.WriteHeader(http.StatusNoContent)
	})
	port := guardPort(t, srv.URL)
	g, err := push.NewGuard([]string{"hooks.internal.example"},
		guardHosts(map[string][]string{"hooks.internal.example": {"127.0.0.1"}}))
	if err != nil {
		t.Fatal(err)
	}
	target := "http://hooks.internal.example:" + port + "/hook"
	resp, err := guardClient(t, g).Get(target)
	if err != nil {
		t.Fatalf("Get(%s) = %v", target, err)
	}
	resp.Body.Close()
	if want := "hooks.internal.example:" + port; gotHost.Load() != want {
		t.Errorf("server saw Host %v, want %q", gotHost.Load(), want)
	}
}

func TestGuardClientNoRedirects(t *testing.T) {
	var followed atomic.Int64
	srv, _ := guardServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/other" {
			followed.Add(1)
			return
		}
		http.Redirect(w, r, "/other", http.StatusFound)
	})
	g := &push.Guard{Allow: []string{"127.0.0.1/32"}}
	resp, err := guardClient(t, g).Post(srv.URL+"/hook", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("Post = %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/other" {
		t.Errorf("Post = %s Location %q, want 302 Location /other", resp.Status, resp.Header.Get("Location"))
	}
	if n := followed.Load(); n != 0 {
		t.Errorf("redirect followed %d times, want 0", n)
	}
}

// TestGuardClientDNSRebinding: the name is public when Check runs and
// loopback when the client connects; the connection must be refused.
func TestGuardClientDNSRebinding(t *testing.T) {
	srv, hits := guardServer(t, guardNoContent)
	res := &guardResolver{}
	res.lookup = func(_ context.Context, host string) ([]net.IPAddr, error) {
		if host != "rebind.example" {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		if res.calls.Load() == 1 {
			return []net.IPAddr{{IP: net.ParseIP("93.184.216.34")}}, nil // Check: public, never dialled
		}
		return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}}, nil // connect: rebound to loopback
	}
	g := &push.Guard{Resolver: res}
	target := "http://rebind.example:" + guardPort(t, srv.URL) + "/hook"
	if err := g.Check(context.Background(), target); err != nil {
		t.Fatalf("Check(%s) = %v, want nil", target, err)
	}
	resp, err := guardClient(t, g).Post(target, "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("Post(%s) = %s, want a refusal", target, resp.Status)
	}
	var refused *push.RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("Post = %v, want *RefusedError", err)
	}
	if want := `webhook host "rebind.example" resolves to a loopback address (127.0.0.1)`; refused.Reason != want {
		t.Errorf("Reason = %q, want %q", refused.Reason, want)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server got %d requests, want 0", n)
	}
	if n := res.calls.Load(); n != 2 {
		t.Errorf("resolver called %d times, want 2 (Check, then connect)", n)
	}
}

func TestGuardClientSettings(t *testing.T) {
	c := (&push.Guard{}).Client(7 * time.Second)
	if c.Timeout != 7*time.Second {
		t.Errorf("Timeout = %v, want 7s", c.Timeout)
	}
	tr, isTransport := c.Transport.(*http.Transport)
	if !isTransport {
		t.Fatalf("Transport is %T, want *http.Transport", c.Transport)
	}
	if tr.Proxy != nil {
		t.Error("Transport.Proxy is set, want nil (a proxy would bypass the guard)")
	}
	if tr.DialContext == nil {
		t.Error("Transport.DialContext is nil, want the guarded dialer")
	}
}

func TestGuardControl(t *testing.T) {
	tests := []struct {
		allow   []string
		address string
		want    string
	}{
		{nil, "93.184.216.34:443", ""},
		{nil, "[2606:4700:4700::1111]:443", ""},
		{nil, "127.0.0.1:80", "webhook address 127.0.0.1 is a loopback address"},
		{nil, "[::ffff:127.0.0.1]:80", "webhook address ::ffff:127.0.0.1 is a loopback address"},
		{nil, "169.254.169.254:80", "webhook address 169.254.169.254 is a link-local address"},
		{nil, "[fe80::1%eth0]:80", "webhook address fe80::1%eth0 is a link-local address"},
		{[]string{"127.0.0.1/32"}, "127.0.0.1:80", ""},
		{[]string{"127.0.0.1/32"}, "[::ffff:127.0.0.1]:80", ""},
	}
	for _, tt := range tests {
		g := &push.Guard{Allow: tt.allow}
		var got string
		if err := g.ControlForTest("tcp4", tt.address); err != nil {
			var refused *push.RefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("Control(%q) = %v, want *RefusedError", tt.address, err)
			}
			got = refused.Reason
		}
		if got != tt.want {
			t.Errorf("Control(%q) with Allow %q refused with %q, want %q", tt.address, tt.allow, got, tt.want)
		}
	}
}

func guardPort(tb testing.TB, rawURL string) string {
	tb.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		tb.Fatal(err)
	}
	return u.Port()
}

func ExampleGuard_Check() {
	g, err := push.NewGuard([]string{"10.1.0.0/16"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g.Check(context.Background(), "http://10.1.2.3/hook"))
	fmt.Println(g.Check(context.Background(), "http://127.0.0.1/hook"))
	fmt.Println(g.Check(context.Background(), "http://[::ffff:169.254.169.254]/hook"))
	// Output:
	// <nil>
	// webhook host "127.0.0.1" is a loopback address
	// webhook host "::ffff:169.254.169.254" is a link-local address
}
