package jsonrpc

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2ad/a2ad/a2a"
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

// card serves the card at both paths, GET and HEAD, with its ETag and
// Last-Modified: the pure 1.0 card to a request that asks for 1.0 when
// the card speaks both versions, the default card to the others.
func (s *Server) card(c echo.Context) error {
	card := s.cfg.Card()
	body, etag := card.JSON, card.ETag
	h := c.Response().Header()
	if card.ByVersion {
		h.Add("Vary", a2a.VersionHeader)
		if v, err := a2a.ParseVersion(transport.VersionAsked(c.Request())); err == nil && v == a2a.V10 {
			// Another representation, so another tag.
			body, etag = card.V1JSON, strings.TrimSuffix(etag, `"`)+`-v1"`
		}
	}
	h.Set("ETag", etag)
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(s.cfg.CardMaxAge.Seconds())))
	if !card.Modified.IsZero() {
		h.Set("Last-Modified", card.Modified.UTC().Format(http.TimeFormat))
	}
	if notModified(c.Request().Header, etag, card.Modified) {
		return c.NoContent(http.StatusNotModified)
	}
	// Set, not left to net/http: a card beyond its buffer would go out
	// chunked, and a HEAD would carry no length.
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}

// notModified implements If-None-Match, and If-Modified-Since when the
// request has no If-None-Match (RFC 9110 13.1.3).
func notModified(req http.Header, etag string, modified time.Time) bool {
	if inm := req.Get("If-None-Match"); inm != "" {
		return etagMatch(inm, etag)
	}
	ims := req.Get("If-Modified-Since")
	if ims == "" || modified.IsZero() {
		return false
	}
	t, err := http.ParseTime(ims)
	return err == nil && !modified.Truncate(time.Second).After(t)
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
