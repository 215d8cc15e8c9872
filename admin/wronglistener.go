package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// WrongListenerMessage is what the main listener answers to a request
// for an admin route: operators who point curl or the CLI at the A2A port
// learn where to look instead of reading a bare 404.
const WrongListenerMessage = "this is the main listener; the admin listener is --admin-listen (default 127.0.0.1:8081)"

// WrongListener answers 404 with WrongListenerMessage. The main listener
// serves it for /admin/*.
func WrongListener(echo.Context) error {
	return echo.NewHTTPError(http.StatusNotFound, WrongListenerMessage)
}

// notTheMainListenerMessage is the admin listener's answer to the A2A
// endpoint and the card, the other way round.
const notTheMainListenerMessage = "this is the admin listener; the A2A endpoint and the agent card are on the main listener, --listen (default 127.0.0.1:8080)"

func notTheMainListener(echo.Context) error {
	return echo.NewHTTPError(http.StatusNotFound, notTheMainListenerMessage)
}
