package mcp

import "net/http"

// FastAnswers is how many messages h, a *Server, answered on its fast
// path.
func FastAnswers(h http.Handler) int64 { return h.(*Server).fastAnswers.Load() }
