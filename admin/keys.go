package admin

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// KeysPath is where the admin listener lists the keys in force.
const KeysPath = "/admin/v1/keys"

// KeyList is GET /admin/v1/keys: every key of the keys file in force,
// with its last use by this server since it started.
type KeyList struct {
	Keys []KeyInfo `json:"keys"`
}

// KeyInfo is one key: never its hash.
type KeyInfo struct {
	Caller string `json:"caller"`
	KeyID  string `json:"keyId"`
	// State is "active", "revoked", or "disabled" (its caller is).
	State   string     `json:"state"`
	Created *time.Time `json:"created"` // null when unknown
	Revoked *time.Time `json:"revoked"` // null while in force
	// LastUsed is the key's last use (to the second) since this server
	// started; null when none. Each replica knows its own.
	LastUsed *time.Time `json:"lastUsed"`
}

// addKeysRoute adds GET /admin/v1/keys; list is nil without a keys file,
// which the route answers 404.
func (s *Server) addKeysRoute(e *echo.Echo, list func() *KeyList) {
	e.GET(KeysPath, func(c echo.Context) error {
		if err := checkParams(c.QueryParams()); err != nil {
			return c.JSON(http.StatusBadRequest, ErrorBody{Message: err.Error()})
		}
		if list == nil {
			return c.JSON(http.StatusNotFound, ErrorBody{Message: "this server has no keys file"})
		}
		return c.JSON(http.StatusOK, list())
	})
}

// Keys returns the keys of the server's keys file with their last use.
// Errors: *StatusError (404 for a server without a keys file), else a
// transport or decoding error.
func (c *Client) Keys(ctx context.Context) (*KeyList, error) {
	var list KeyList
	if _, err := c.call(ctx, http.MethodGet, KeysPath, &list); err != nil {
		return nil, err
	}
	return &list, nil
}
