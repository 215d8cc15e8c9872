package jsonrpc

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/a2ad/a2ad/a2a"
)

// httpStatus is the HTTP status of an answer carrying rpcErr (nil for a
// result): 200, as JSON-RPC has it, but for a task store that cannot be
// reached or a server draining for shutdown, 503 with Retry-After, so that
// a load balancer or client retries it as it would any unavailable server
// (a balancer, elsewhere).
func httpStatus(c echo.Context, rpcErr *a2a.Error) int {
	if rpcErr != nil && (rpcErr.Code == a2a.CodeStoreUnavailable || rpcErr.Code == a2a.CodeShuttingDown) {
		c.Response().Header().Set("Retry-After", "1")
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
}
