package httpx

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// Router is what routes are added to: an *echo.Echo or an *echo.Group.
type Router interface {
	Match(methods []string, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) []*echo.Route
}

var (
	_ Router = (*echo.Echo)(nil)
	_ Router = (*echo.Group)(nil)
)

// GET routes GET and HEAD of path to h. Uptime and link checkers use
// HEAD; Echo answers it 405 unless it is routed. The handler runs as for
// GET, so HEAD gets the same status and headers (ETag, Content-Length,
// a 304 for a matching If-None-Match), and net/http drops the body.
func GET(r Router, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) []*echo.Route {
	return r.Match([]string{http.MethodGet, http.MethodHead}, path, h, m...)
}

// ServedAsGET reports whether a request of method is served as a GET
// route serves GET: GET itself, and HEAD (see GET). A binding that routes
// its paths itself (HTTP+JSON) asks it where Echo's router would use GET.
func ServedAsGET(method string) bool { return method == http.MethodGet || method == http.MethodHead }
