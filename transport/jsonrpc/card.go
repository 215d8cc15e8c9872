package jsonrpc

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/a2ad/a2ad/transport"
	"github.com/labstack/echo/v4"
)

// CardSource returns the card to serve; it must be cheap (built ahead).
type CardSource func() transport.Card

// The card's paths: the well-known one, and the one 0.2 clients read.
const (
	CardPath       = "/.well-known/agent-card.json"
	LegacyCardPath = "/.well-known/agent.json"
	// CardKeysPath is the JWKS of the keys that sign the card: the jku
	// of its signatures names it.
	CardKeysPath = "/.well-known/a2ad-card-keys.json"
)

// cardKeys serves the JWKS of the card's signing keys, cached as long as
// the card.
func (s *Server) cardKeys(c echo.Context) error {
	var keys []byte
	if s.cfg.CardKeys != nil {
		keys = s.cfg.CardKeys()
	}
	if keys == nil {
		return echo.NewHTTPError(http.StatusNotFound, "the card is not signed")
	}
	c.Response().Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(s.cfg.CardMaxAge.Seconds())))
	return c.Blob(http.StatusOK, "application/jwk-set+json", keys)
}

// card serves the card at both paths, GET and HEAD, with its ETag.
func (s *Server) card(c echo.Context) error {
	card := s.cfg.Card()
	h := c.Response().Header()
	h.Set("ETag", card.ETag)
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(s.cfg.CardMaxAge.Seconds())))
	if etagMatch(c.Request().Header.Get("If-None-Match"), card.ETag) {
		return c.NoContent(http.StatusNotModified)
	}
	// Set, not left to net/http: a card beyond its buffer would go out
	// chunked, and a HEAD would carry no length.
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(card.JSON)))
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, card.JSON)
}

// etagMatch implements If-None-Match: a list of entity tags, or "*".
// Weak tags match by their opaque part.
func etagMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
