package httpx_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/a2ad/a2ad/transport/httpx"
)

func TestNewCORS(t *testing.T) {
	for _, tt := range []struct {
		list []string
		err  string
	}{
		{nil, ""},
		{[]string{"*"}, ""},
		{[]string{"https://app.example", "http://127.0.0.1:5173", "HTTPS://App.Example:443", "http://[::1]:80", "chrome-extension://abcdef"}, ""},
		{[]string{"*", "https://app.example"}, `"*" stands alone: it opens the card to every origin and the other routes to none; give "*" or a list of origins`},
		{[]string{"https://app.example/"}, `"https://app.example/": an origin has no path, query or fragment: want scheme://host[:port]`},
		{[]string{"https://app.example", "https://app.example/ui"}, `"https://app.example/ui": an origin has no path, query or fragment: want scheme://host[:port]`},
		{[]string{"https://app.example?x"}, `"https://app.example?x": an origin has no path, query or fragment: want scheme://host[:port]`},
		{[]string{"https://app.example#"}, `"https://app.example#": an origin has no path, query or fragment: want scheme://host[:port]`},
		{[]string{"app.example"}, `"app.example": not an origin: want scheme://host[:port]`},
		{[]string{"null"}, `"null": not an origin: want scheme://host[:port]`},
		{[]string{"https://"}, `"https://": not an origin: want scheme://host[:port]`},
		{[]string{"https://:8080"}, `"https://:8080": not an origin: want scheme://host[:port]`},
		{[]string{"https://app.example:"}, `"https://app.example:": not an origin: want scheme://host[:port]`},
		{[]string{"mailto:a@b.example"}, `"mailto:a@b.example": not an origin: want scheme://host[:port]`},
		{[]string{"https://u:p@app.example"}, `"https://u:p@app.example": an origin has no user: want scheme://host[:port]`},
		{[]string{"https://app.example:0"}, `"https://app.example:0": port must be 1 to 65535`},
		{[]string{"https://app.example:70000"}, `"https://app.example:70000": port must be 1 to 65535`},
		{[]string{"https://bücher.example"}, `"https://bücher.example": the host must be ASCII (punycode, as browsers send it)`},
		{[]string{"https://app.example:80a"}, `"https://app.example:80a": not an origin: want scheme://host[:port]`},
	} {
		c, err := httpx.NewCORS(tt.list)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.err {
			t.Errorf("NewCORS(%q): error %q, want %q", tt.list, got, tt.err)
		}
		if err == nil && (c == nil) != (len(tt.list) == 0) {
			t.Errorf("NewCORS(%q) = %v: nil only for an empty list", tt.list, c)
		}
	}
}

// corsServer serves, under the policy of list, a public /card (GET) and
// /a2a (POST, other methods 405 as the JSON-RPC binding does), on a real
// loopback listener.
func corsServer(t *testing.T, list ...string) (base string, served *atomic.Int64) {
	t.Helper()
	c, err := httpx.NewCORS(list)
	if err != nil {
		t.Fatal(err)
	}
	served = new(atomic.Int64)
	e := echo.New()
	e.Use(c.Middleware("/card"))
	httpx.GET(e, "/card", func(ec echo.Context) error {
		served.Add(1)
		ec.Response().Header().Set("ETag", `"v1"`)
		return ec.String(http.StatusOK, "card")
	})
	e.POST("/a2a", func(ec echo.Context) error {
		served.Add(1)
		return ec.String(http.StatusOK, "rpc")
	})
	e.Match([]string{http.MethodGet, http.MethodOptions}, "/a2a", func(ec echo.Context) error {
		return echo.NewHTTPError(http.StatusMethodNotAllowed)
	})
	ts := httptest.NewServer(e)
	t.Cleanup(ts.Close)
	return ts.URL, served
}

type corsCase struct {
	name           string
	method, path   string
	origin         string
	acrm, acrh     string // a preflight's Access-Control-Request-Method and -Headers
	code           int
	body           string
	allowOrigin    string
	vary           []string
	served         bool   // the handler ran
	preflightAllow string // Access-Control-Allow-Methods of an answered preflight
}

func (tt corsCase) run(t *testing.T, base string, served *atomic.Int64) {
	t.Helper()
	before := served.Load()
	req, _ := http.NewRequest(tt.method, base+tt.path, nil)
	if tt.origin != "" {
		req.Header.Set("Origin", tt.origin)
	}
	if tt.acrm != "" {
		req.Header.Set("Access-Control-Request-Method", tt.acrm)
		req.Header.Set("Access-Control-Request-Headers", tt.acrh)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != tt.code || strings.TrimSpace(string(b)) != tt.body {
		t.Errorf("%s: %d %q, want %d %q", tt.name, resp.StatusCode, b, tt.code, tt.body)
	}
	if got := h.Get("Access-Control-Allow-Origin"); got != tt.allowOrigin {
		t.Errorf("%s: Access-Control-Allow-Origin %q, want %q", tt.name, got, tt.allowOrigin)
	}
	if got := h.Values("Vary"); !reflect.DeepEqual(got, tt.vary) {
		t.Errorf("%s: Vary %q, want %q", tt.name, got, tt.vary)
	}
	if got := served.Load() > before; got != tt.served {
		t.Errorf("%s: handler ran: %v, want %v", tt.name, got, tt.served)
	}
	if h.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("%s: Access-Control-Allow-Credentials %q: never", tt.name, h.Get("Access-Control-Allow-Credentials"))
	}
	wantExpose, wantHeaders, wantAge := "", "", ""
	switch {
	case tt.preflightAllow != "":
		wantHeaders, wantAge = "Authorization, X-API-Key, Content-Type, A2A-Version, Last-Event-ID, A2A-Extensions, X-A2A-Extensions, MCP-Protocol-Version, Mcp-Method, Mcp-Name", "600"
	case tt.allowOrigin != "":
		wantExpose = "ETag, Retry-After"
	}
	for k, want := range map[string]string{
		"Access-Control-Expose-Headers": wantExpose, "Access-Control-Allow-Methods": tt.preflightAllow,
		"Access-Control-Allow-Headers": wantHeaders, "Access-Control-Max-Age": wantAge,
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %s %q, want %q", tt.name, k, got, want)
		}
	}
}

// TestCORSOrigins: the card is read from every origin; /a2a only from
// the listed one (written as a browser would not, and matched as it
// sends it), whose preflight names what a page may send; a preflight
// from another origin is refused plainly and no answer carries CORS
// headers for it.
func TestCORSOrigins(t *testing.T) {
	base, served := corsServer(t, "HTTPS://App.Example:443", "http://127.0.0.1:5173")
	const (
		app, evil = "https://app.example", "https://evil.example"
		refused   = `{"message":"cross-origin requests from this origin are not allowed here (see --cors-origins)"}`
	)
	origin := []string{"Origin"}
	preflightVary := []string{"Origin", "Access-Control-Request-Method", "Access-Control-Request-Headers"}
	for _, tt := range []corsCase{
		{name: "card, no Origin", method: "GET", path: "/card", code: 200, body: "card", allowOrigin: "*", served: true},
		{name: "card, any origin", method: "GET", path: "/card", origin: evil, code: 200, body: "card", allowOrigin: "*", served: true},
		{name: "card HEAD", method: "HEAD", path: "/card", origin: evil, code: 200, allowOrigin: "*", served: true},
		{name: "card preflight, any origin", method: "OPTIONS", path: "/card", origin: evil, acrm: "GET", acrh: "a2a-version",
			code: 204, allowOrigin: "*", vary: preflightVary[1:], preflightAllow: "GET, HEAD"},
		{name: "a2a preflight, listed", method: "OPTIONS", path: "/a2a", origin: app, acrm: "POST", acrh: "authorization,content-type",
			code: 204, allowOrigin: app, vary: preflightVary, preflightAllow: "POST"},
		{name: "a2a preflight, listed with a port", method: "OPTIONS", path: "/a2a", origin: "http://127.0.0.1:5173", acrm: "POST", acrh: "x-api-key",
			code: 204, allowOrigin: "http://127.0.0.1:5173", vary: preflightVary, preflightAllow: "POST"},
		{name: "a2a preflight, another port", method: "OPTIONS", path: "/a2a", origin: "http://127.0.0.1:5174", acrm: "POST",
			code: 403, body: refused, vary: origin},
		{name: "a2a preflight, not listed", method: "OPTIONS", path: "/a2a", origin: evil, acrm: "POST", acrh: "authorization",
			code: 403, body: refused, vary: origin},
		{name: "a2a preflight, a method no route serves", method: "OPTIONS", path: "/a2a", origin: app, acrm: "TRACE",
			code: 403, body: `{"message":"cross-origin requests may not use this method"}`, vary: origin},
		{name: "a2a POST, listed", method: "POST", path: "/a2a", origin: app, code: 200, body: "rpc", allowOrigin: app, vary: origin, served: true},
		{name: "a2a POST, not listed", method: "POST", path: "/a2a", origin: evil, code: 200, body: "rpc", vary: origin, served: true},
		{name: "a2a POST, no Origin", method: "POST", path: "/a2a", code: 200, body: "rpc", vary: origin, served: true},
		{name: "a2a OPTIONS, not a preflight", method: "OPTIONS", path: "/a2a", origin: app,
			code: 405, body: `{"message":"Method Not Allowed"}`, allowOrigin: app, vary: origin},
	} {
		tt.run(t, base, served)
	}
}

// TestCORSCardOnly: "*" opens the card to every origin and nothing else
// to any.
func TestCORSCardOnly(t *testing.T) {
	base, served := corsServer(t, "*")
	const app = "https://app.example"
	for _, tt := range []corsCase{
		{name: "card", method: "GET", path: "/card", origin: app, code: 200, body: "card", allowOrigin: "*", served: true},
		{name: "card preflight", method: "OPTIONS", path: "/card", origin: app, acrm: "GET", acrh: "a2a-version",
			code: 204, allowOrigin: "*", vary: []string{"Access-Control-Request-Method", "Access-Control-Request-Headers"}, preflightAllow: "GET, HEAD"},
		{name: "a2a preflight", method: "OPTIONS", path: "/a2a", origin: app, acrm: "POST", acrh: "content-type",
			code: 403, body: `{"message":"cross-origin requests from this origin are not allowed here (see --cors-origins)"}`},
		{name: "a2a POST", method: "POST", path: "/a2a", origin: app, code: 200, body: "rpc", served: true},
	} {
		tt.run(t, base, served)
	}
}
