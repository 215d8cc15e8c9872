package transport

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientAddr returns the address of the client that sent r, as a string
// (an IPv4-mapped IPv6 address is given as IPv4, without a zone):
//
//   - the TCP peer's address, unless the peer is in trusted;
//   - from a trusted peer (a reverse proxy), the rightmost address of
//     X-Forwarded-For, or of the for= parameters of Forwarded (RFC 7239),
//     that is not itself in trusted: each proxy appends the address it
//     got the request from, so that one is the last that a trusted hop
//     vouches for, and whatever a client wrote to the left of it counts
//     for nothing. When that entry is not an address (garbage, "unknown",
//     an obfuscated "_hidden"), the nearest trusted hop is the client; when
//     every entry is trusted, the leftmost one is;
//   - from a trusted peer that sent both headers, the address they agree
//     on, or the peer's own when they do not: a proxy that sets one of
//     them passes a client's forged copy of the other through unchanged,
//     so neither can be believed alone;
//   - from a trusted peer that sent neither, the peer's address.
//
// A RemoteAddr that is not an address (not from a TCP connection) is
// returned as it is.
func ClientAddr(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	if peer.Is4In6() || peer.Zone() != "" {
		peer = peer.Unmap().WithZone("")
		host = peer.String()
	}
	if !inPrefixes(peer, trusted) {
		return host // already in canonical form: no copy
	}
	xff, fwd := r.Header.Values("X-Forwarded-For"), r.Header.Values("Forwarded")
	var fromXFF, fromFwd netip.Addr
	if len(xff) > 0 {
		fromXFF = rightmostUntrusted(peer, strings.Split(strings.Join(xff, ","), ","), trusted)
	}
	if len(fwd) > 0 {
		fromFwd = rightmostUntrusted(peer, forwardedFor(strings.Join(fwd, ",")), trusted)
	}
	switch {
	case len(xff) > 0 && len(fwd) > 0:
		if fromXFF != fromFwd {
			return peer.String()
		}
		return fromXFF.String()
	case len(xff) > 0:
		return fromXFF.String()
	case len(fwd) > 0:
		return fromFwd.String()
	}
	return host
}

// rightmostUntrusted walks hops (nearest last) from the right: the first
// address not in trusted is the client; an entry that is not an address
// ends the walk at the last trusted hop, peer to begin with.
func rightmostUntrusted(peer netip.Addr, hops []string, trusted []netip.Prefix) netip.Addr {
	last := peer
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if hop == "" {
			continue // an empty list element: nothing
		}
		a, ok := parseAddr(hop)
		if !ok {
			return last
		}
		if !inPrefixes(a, trusted) {
			return a
		}
		last = a
	}
	return last
}

// parseAddr reads an address with or without a port ("192.0.2.1",
// "192.0.2.1:80", "2001:db8::1", "[2001:db8::1]:80", "[2001:db8::1]").
func parseAddr(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		if perr != nil {
			if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
				return netip.Addr{}, false
			}
			if a, err = netip.ParseAddr(s[1 : len(s)-1]); err != nil {
				return netip.Addr{}, false
			}
		} else {
			a = ap.Addr()
		}
	}
	return a.Unmap().WithZone(""), true
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedFor returns the for= value of each element of a Forwarded
// header (RFC 7239), in order, unquoted; "unknown" for an element without
// one (the hop did not say), "" for an empty element. Commas and
// semicolons inside quoted strings do not split.
func forwardedFor(h string) []string {
	var out []string
	var name, val strings.Builder
	inName, quoted, escaped := true, false, false
	var forVal string
	hasFor, empty := false, true
	endElement := func() {
		switch {
		case empty:
			out = append(out, "")
		case !hasFor:
			out = append(out, "unknown")
		default:
			out = append(out, forVal)
		}
		forVal, hasFor, empty = "", false, true
	}
	endPair := func() {
		if strings.EqualFold(strings.TrimSpace(name.String()), "for") && !hasFor {
			forVal, hasFor = strings.TrimSpace(val.String()), true
		}
		name.Reset()
		val.Reset()
		inName = true
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c != ',' && c != ' ' && c != '\t' {
			empty = false
		}
		switch {
		case escaped:
			val.WriteByte(c)
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"' && !inName:
			quoted = !quoted
		case quoted:
			val.WriteByte(c)
		case c == '=' && inName:
			inName = false
		case c == ';':
			endPair()
		case c == ',':
			endPair()
			endElement()
		case inName:
			name.WriteByte(c)
		default:
			val.WriteByte(c)
		}
	}
	endPair()
	endElement()
	return out
}
