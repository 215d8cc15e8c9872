package httpx

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// The CORS headers a2ad answers with. Allowed are the headers a client of
// the bindings sends beyond the safelisted ones (a key, the JSON body's
// type, the version asked for, MCP's revision, method and tool name, the
// event a stream resumes after, and the extensions it opts into: a2ad ignores them, but a preflight that left
// them out would fail the whole call of a browser client that sends
// them); exposed are the ones a page needs to read beyond the safelisted
// ones.
const (
	corsAllowHeaders  = "Authorization, X-API-Key, Content-Type, A2A-Version, Last-Event-ID, A2A-Extensions, X-A2A-Extensions, MCP-Protocol-Version, Mcp-Method, Mcp-Name"
	corsExposeHeaders = "ETag, Retry-After"
	corsPublicMethods = "GET, HEAD"
	corsMaxAge        = "600" // seconds a browser may reuse a preflight's answer
)

// corsMethods are the methods a preflight may ask for on a route that is
// not public; a method the route does not serve still gets its 405.
var corsMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true,
	http.MethodPut: true, http.MethodPatch: true, http.MethodDelete: true,
}

// CORS is a listener's cross-origin policy: which web pages, by origin,
// may read its answers in a browser. Public paths (the card, which never
// shows a secret) may be read from every origin, with
// Access-Control-Allow-Origin: *; every other route only from the
// origins listed, each answered with its own origin and Vary: Origin.
// Credentials (cookies) are never allowed: a2ad reads its callers' keys
// from headers, which a page sets itself.
type CORS struct {
	origins map[string]bool // none for "*": public paths only
}

// NewCORS is the policy of list, the entries of --cors-origins: origins
// (scheme://host[:port], compared as a browser sends them), or "*" alone
// for the public paths only. An entry that is neither is an error naming
// it. An empty list is nil: no CORS.
func NewCORS(list []string) (*CORS, error) {
	if len(list) == 0 {
		return nil, nil
	}
	c := &CORS{origins: map[string]bool{}}
	for _, s := range list {
		if s == "*" {
			if len(list) > 1 {
				return nil, fmt.Errorf(`"*" stands alone: it opens the card to every origin and the other routes to none; give "*" or a list of origins`)
			}
			return c, nil
		}
		o, err := parseOrigin(s)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", s, err)
		}
		c.origins[o] = true
	}
	return c, nil
}

// Allows reports whether origin (an Origin header) is one the policy
// lists; false for none, and for a nil policy.
func (c *CORS) Allows(origin string) bool {
	return c != nil && origin != "" && c.origins[origin]
}

// parseOrigin returns s as a browser serialises an origin in its Origin
// header: the scheme and host lower case, without a default port.
func parseOrigin(s string) (string, error) {
	const want = "want scheme://host[:port]"
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Scheme == "" || u.Opaque != "" || u.Host == "":
		return "", fmt.Errorf("not an origin: %s", want)
	case u.User != nil:
		return "", fmt.Errorf("an origin has no user: %s", want)
	case u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(s, "#"):
		return "", fmt.Errorf("an origin has no path, query or fragment: %s", want)
	}
	for _, r := range u.Host {
		if r > 0x7e {
			return "", fmt.Errorf("the host must be ASCII (punycode, as browsers send it)")
		}
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if host == "" || strings.HasSuffix(u.Host, ":") {
		return "", fmt.Errorf("not an origin: %s", want)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("port must be 1 to 65535")
		}
		if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
			port = ""
		}
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

// Middleware applies the policy, public being the paths every origin may
// read (GET and HEAD). Install it with Echo.Use, which wraps every
// request, the ones Echo answers itself (a 405, an OPTIONS) included: a
// group's Use would not see the preflight of a route that serves no
// OPTIONS. A preflight from an origin not allowed is refused with 403 and
// no CORS header; any other request from it is served as if no page had
// sent it, without CORS headers, so the browser keeps its answer from
// the page.
func (c *CORS) Middleware(public ...string) echo.MiddlewareFunc {
	pub := make(map[string]bool, len(public))
	for _, p := range public {
		pub[p] = true
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(ec echo.Context) error {
			r, h := ec.Request(), ec.Response().Header()
			isPublic := pub[r.URL.Path]
			if !isPublic && len(c.origins) > 0 {
				// The answer depends on the Origin: a cache must not
				// give one origin's answer to another.
				h.Add(echo.HeaderVary, echo.HeaderOrigin)
			}
			origin := r.Header.Get(echo.HeaderOrigin)
			allow := "*"
			if !isPublic {
				if origin == "" || !c.origins[origin] {
					return refuse(ec, next, origin)
				}
				allow = origin
			}
			if isPreflight(r) {
				return preflight(ec, allow, isPublic)
			}
			// The card's answer carries it with no Origin too: a cache
			// may give it to a page.
			h.Set(echo.HeaderAccessControlAllowOrigin, allow)
			h.Set(echo.HeaderAccessControlExposeHeaders, corsExposeHeaders)
			return next(ec)
		}
	}
}

// refuse serves a request from an origin the policy does not allow: a
// preflight gets 403, anything else is served without CORS headers.
func refuse(ec echo.Context, next echo.HandlerFunc, origin string) error {
	if origin != "" && isPreflight(ec.Request()) {
		return echo.NewHTTPError(http.StatusForbidden, "cross-origin requests from this origin are not allowed here (see --cors-origins)")
	}
	return next(ec)
}

func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get(echo.HeaderAccessControlRequestMethod) != ""
}

// preflight answers a preflight allowed from allow: 204 with the methods
// and headers a page may send.
func preflight(ec echo.Context, allow string, public bool) error {
	h := ec.Response().Header()
	methods := corsPublicMethods
	if !public {
		m := ec.Request().Header.Get(echo.HeaderAccessControlRequestMethod)
		if !corsMethods[m] {
			return echo.NewHTTPError(http.StatusForbidden, "cross-origin requests may not use this method")
		}
		methods = m
	}
	h.Add(echo.HeaderVary, echo.HeaderAccessControlRequestMethod)
	h.Add(echo.HeaderVary, echo.HeaderAccessControlRequestHeaders)
	h.Set(echo.HeaderAccessControlAllowOrigin, allow)
	h.Set(echo.HeaderAccessControlAllowMethods, methods)
	h.Set(echo.HeaderAccessControlAllowHeaders, corsAllowHeaders)
	h.Set(echo.HeaderAccessControlMaxAge, corsMaxAge)
	return ec.NoContent(http.StatusNoContent)
}
