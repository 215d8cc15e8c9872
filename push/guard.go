package push

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Resolver resolves host names to addresses. *net.Resolver satisfies it.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// Guard decides which webhook destinations a2ad may contact. By default
// it allows only public addresses: see nonPublicV4 and nonPublicV6 for
// what is refused. The zero Guard allows no exceptions and uses
// net.DefaultResolver. A Guard is safe for concurrent use as long as its
// fields are not changed.
type Guard struct {
	// Allow opens chosen destinations: CIDRs ("127.0.0.1/32",
	// "10.1.0.0/16", "::1/128"), single addresses ("127.0.0.1", taken as
	// /32 or /128) and host names (exact, case-insensitive, e.g.
	// "hooks.internal.example"). An allowed host name is allowed whatever
	// it resolves to; an allowed CIDR allows addresses inside it. An
	// IPv4-mapped CIDR ("::ffff:10.0.0.0/104") is the IPv4 CIDR it maps.
	Allow []string
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
}

// RefusedError reports a webhook URL or destination that the Guard
// refuses.
type RefusedError struct {
	// Reason says why, naming the URL's host and the class of address,
	// e.g. `webhook host "127.0.0.1" is a loopback address`. It is safe
	// to show to the caller who supplied the URL.
	Reason string
	// Err is the underlying cause, if any (e.g. the resolver's error).
	// It is for logs, not for the caller.
	Err error
}

func (e *RefusedError) Error() string { return e.Reason }

func (e *RefusedError) Unwrap() error { return e.Err }

// NewGuard returns a Guard that opens the destinations in allow (see
// Guard.Allow) and resolves names with r (nil means net.DefaultResolver).
// It returns an error naming the first entry of allow that is neither a
// CIDR, an address nor a host name.
func NewGuard(allow []string, r Resolver) (*Guard, error) {
	if _, err := parseGuardAllow(allow); err != nil {
		return nil, err
	}
	return &Guard{Allow: slices.Clone(allow), Resolver: r}, nil
}

// Check validates a webhook URL, as when a push config is set. The URL
// must be absolute with scheme http or https and a host, carry no user
// info, and every address its host resolves to must be public or allowed
// (an allowed host name is not resolved). Check returns a *RefusedError
// if the URL is refused, the context's error if ctx ends while resolving,
// and an error naming the entry if g.Allow holds an invalid entry.
//
// Check alone does not stop DNS rebinding: deliver with g.Client, which
// checks again at connect time.
func (g *Guard) Check(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return &RefusedError{Reason: "webhook URL is malformed", Err: err}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return &RefusedError{Reason: "webhook URL must use http or https"}
	}
	if u.User != nil {
		return &RefusedError{Reason: "webhook URL must not contain credentials"}
	}
	host := u.Hostname()
	if host == "" {
		return &RefusedError{Reason: "webhook URL must be absolute and name a host"}
	}
	rules, err := parseGuardAllow(g.Allow)
	if err != nil {
		return err
	}
	_, _, err = g.targets(ctx, rules, host, false)
	return err
}

// Client returns an *http.Client for webhook deliveries, with the given
// per-attempt timeout (zero means none). Its transport checks each
// connection as it is made: it resolves the host with g.Resolver, refuses
// (with a *RefusedError) if any address is neither public nor allowed,
// and dials the checked address, never the name, so a name that resolves
// differently after Check cannot get through (DNS rebinding). The client
// never follows redirects (the 3xx response is returned as-is) and uses
// no proxy, since a proxy would dial on a2ad's behalf unchecked. Create
// it once and reuse it: its transport keeps idle connections, which
// CloseIdleConnections releases.
func (g *Guard) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           g.dialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
		Timeout: timeout,
	}
}

// dialContext is the transport's DialContext: resolve, check, then dial
// the checked addresses in turn. The dialer's Control re-checks the
// address actually connected to, unless the host name itself is allowed.
func (g *Guard) dialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	rules, err := parseGuardAllow(g.Allow)
	if err != nil {
		return nil, err
	}
	addrs, allowedName, err := g.targets(ctx, rules, host, true)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if !allowedName {
		d.Control = guardControl(rules)
	}
	var first error
	for _, a := range addrs {
		if (network == "tcp4" && !a.Is4()) || (network == "tcp6" && !a.Is6()) {
			continue
		}
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if first == nil {
		first = &net.AddrError{Err: "no suitable address", Addr: host}
	}
	return nil, first
}

// targets checks host (a URL host without brackets or port) and returns
// the addresses to dial. A literal address is checked as is. A name is
// resolved and every address checked, unless the name is allowed, in
// which case allowedName is true and the name is resolved only if
// resolve is set.
func (g *Guard) targets(ctx context.Context, rules *guardAllow, host string, resolve bool) (addrs []netip.Addr, allowedName bool, err error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if !rules.permits(a) {
			if class, public := classifyAddr(a); !public {
				return nil, false, &RefusedError{Reason: fmt.Sprintf("webhook host %q is %s address", host, class)}
			}
		}
		return []netip.Addr{a}, false, nil
	}
	name, ok := canonicalHostName(host)
	if !ok {
		return nil, false, &RefusedError{Reason: fmt.Sprintf("webhook host %q is not a valid host name", host)}
	}
	allowedName = rules.names[name]
	if allowedName && !resolve {
		return nil, true, nil
	}
	addrs, err = g.resolve(ctx, host)
	if err != nil {
		return nil, allowedName, err
	}
	if allowedName {
		return addrs, true, nil
	}
	for _, a := range addrs {
		if rules.permits(a) {
			continue
		}
		if class, public := classifyAddr(a); !public {
			return nil, false, &RefusedError{Reason: fmt.Sprintf("webhook host %q resolves to %s address (%s)", host, class, a)}
		}
	}
	return addrs, false, nil
}

// resolve looks host up with g.Resolver. IPv4-mapped results are
// unmapped (net.IP does not tell them apart from IPv4).
func (g *Guard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	var r Resolver = net.DefaultResolver
	if g.Resolver != nil {
		r = g.Resolver
	}
	ips, err := r.LookupIPAddr(ctx, host)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("resolve webhook host %q: %w", host, context.Cause(ctx))
		}
		return nil, &RefusedError{Reason: fmt.Sprintf("webhook host %q could not be resolved", host), Err: err}
	}
	addrs := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		a, ok := netip.AddrFromSlice(ip.IP)
		if !ok {
			continue
		}
		addrs = append(addrs, a.Unmap().WithZone(ip.Zone))
	}
	if len(addrs) == 0 {
		return nil, &RefusedError{Reason: fmt.Sprintf("webhook host %q could not be resolved", host)}
	}
	return addrs, nil
}

// guardControl returns a net.Dialer Control func that refuses to connect
// to an address that is neither public nor allowed by rules.
func guardControl(rules *guardAllow) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &RefusedError{Reason: fmt.Sprintf("webhook address %q is not an IP address", address), Err: err}
		}
		if rules.permits(ap.Addr()) {
			return nil
		}
		if class, public := classifyAddr(ap.Addr()); !public {
			return &RefusedError{Reason: fmt.Sprintf("webhook address %s is %s address", ap.Addr(), class)}
		}
		return nil
	}
}

// guardAllow is a parsed Guard.Allow.
type guardAllow struct {
	prefixes []netip.Prefix
	names    map[string]bool // canonical host names
}

// parseGuardAllow parses allow entries; see Guard.Allow.
func parseGuardAllow(allow []string) (*guardAllow, error) {
	rules := &guardAllow{names: make(map[string]bool)}
	for _, entry := range allow {
		s := strings.TrimSpace(entry)
		if p, err := netip.ParsePrefix(s); err == nil {
			p = p.Masked()
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			rules.prefixes = append(rules.prefixes, p)
			continue
		}
		if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
			a = a.Unmap()
			rules.prefixes = append(rules.prefixes, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		if name, ok := canonicalHostName(s); ok {
			rules.names[name] = true
			continue
		}
		return nil, fmt.Errorf("allow entry %q is neither a CIDR nor a host name", entry)
	}
	return rules, nil
}

// permits reports whether an allowed CIDR contains a.
func (r *guardAllow) permits(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	for _, p := range r.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// canonicalHostName returns s lower-cased without a final dot, and
// whether it is a syntactically valid DNS host name: dot-separated labels
// of 1–63 ASCII letters, digits, '-' or '_', not starting or ending with
// '-', 253 characters at most, and a last label that is not all digits
// (so "127.1" or "2130706433", which some resolvers read as IPv4, are not
// names).
func canonicalHostName(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if s == "" || len(s) > 253 {
		return "", false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "", false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return "", false
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "", false
	}
	return s, true
}

// addrRange is a range of addresses that is not public, with the phrase
// naming its class, article included ("a loopback").
type addrRange struct {
	prefix netip.Prefix
	class  string
}

func mustRange(cidr, class string) addrRange {
	return addrRange{netip.MustParsePrefix(cidr), class}
}

// nonPublicV4 lists the IPv4 ranges a webhook may not reach unless
// allowed, first match wins (RFC 6890 and the IANA special-purpose
// registry):
//
//	0.0.0.0/32          unspecified
//	0.0.0.0/8           reserved ("this network"; 0.0.0.0 reaches the local host on Linux)
//	10.0.0.0/8          private
//	100.64.0.0/10       shared (carrier-grade NAT)
//	127.0.0.0/8         loopback
//	169.254.0.0/16      link-local (includes the cloud metadata service 169.254.169.254)
//	172.16.0.0/12       private
//	192.0.0.0/24        reserved (IETF protocol assignments)
//	192.0.2.0/24        documentation (TEST-NET-1)
//	192.88.99.0/24      reserved (deprecated 6to4 relay anycast)
//	192.168.0.0/16      private
//	198.18.0.0/15       benchmarking
//	198.51.100.0/24     documentation (TEST-NET-2)
//	203.0.113.0/24      documentation (TEST-NET-3)
//	224.0.0.0/4         multicast
//	255.255.255.255/32  broadcast
//	240.0.0.0/4         reserved (future use)
//
// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are unmapped first and
// judged as IPv4.
var nonPublicV4 = []addrRange{
	mustRange("0.0.0.0/32", "an unspecified"),
	mustRange("0.0.0.0/8", "a reserved"),
	mustRange("10.0.0.0/8", "a private"),
	mustRange("100.64.0.0/10", "a shared (carrier-grade NAT)"),
	mustRange("127.0.0.0/8", "a loopback"),
	mustRange("169.254.0.0/16", "a link-local"),
	mustRange("172.16.0.0/12", "a private"),
	mustRange("192.0.0.0/24", "a reserved"),
	mustRange("192.0.2.0/24", "a documentation"),
	mustRange("192.88.99.0/24", "a reserved"),
	mustRange("192.168.0.0/16", "a private"),
	mustRange("198.18.0.0/15", "a benchmarking"),
	mustRange("198.51.100.0/24", "a documentation"),
	mustRange("203.0.113.0/24", "a documentation"),
	mustRange("224.0.0.0/4", "a multicast"),
	mustRange("255.255.255.255/32", "a broadcast"),
	mustRange("240.0.0.0/4", "a reserved"),
}

// nonPublicV6 lists the IPv6 ranges a webhook may not reach unless
// allowed, first match wins; beyond them, anything outside global
// unicast 2000::/3 is reserved:
//
//	::/128          unspecified
//	::1/128         loopback
//	64:ff9b::/96    NAT64 (well-known prefix; open it with Allow on a NAT64 network)
//	64:ff9b:1::/48  NAT64 (local use)
//	100::/64        reserved (discard-only)
//	2001:2::/48     benchmarking
//	2001::/23       reserved (IETF protocol assignments, including Teredo 2001::/32)
//	2001:db8::/32   documentation
//	2002::/16       6to4 (embeds an IPv4 address)
//	3fff::/20       documentation
//	5f00::/16       reserved (SRv6 SIDs)
//	fc00::/7        private (unique local)
//	fe80::/10       link-local
//	fec0::/10       site-local (deprecated)
//	ff00::/8        multicast
//	not 2000::/3    reserved (includes IPv4-compatible ::a.b.c.d)
var nonPublicV6 = []addrRange{
	mustRange("::/128", "an unspecified"),
	mustRange("::1/128", "a loopback"),
	mustRange("64:ff9b::/96", "a NAT64"),
	mustRange("64:ff9b:1::/48", "a NAT64"),
	mustRange("100::/64", "a reserved"),
	mustRange("2001:2::/48", "a benchmarking"),
	mustRange("2001::/23", "a reserved"),
	mustRange("2001:db8::/32", "a documentation"),
	mustRange("2002::/16", "a 6to4"),
	mustRange("3fff::/20", "a documentation"),
	mustRange("5f00::/16", "a reserved"),
	mustRange("fc00::/7", "a private"),
	mustRange("fe80::/10", "a link-local"),
	mustRange("fec0::/10", "a site-local"),
	mustRange("ff00::/8", "a multicast"),
}

var globalUnicastV6 = netip.MustParsePrefix("2000::/3")

// classifyAddr reports whether a is public and, if not, the phrase
// naming its class ("a loopback").
func classifyAddr(a netip.Addr) (class string, public bool) {
	a = a.WithZone("").Unmap()
	ranges := nonPublicV6
	if a.Is4() {
		ranges = nonPublicV4
	}
	for _, r := range ranges {
		if r.prefix.Contains(a) {
			return r.class, false
		}
	}
	if a.Is6() && !globalUnicastV6.Contains(a) {
		return "a reserved", false
	}
	return "", true
}
