package mcp

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestResourceMetadata(t *testing.T) {
	for base, want := range map[string]string{
		"https://agents.example.com":     "https://agents.example.com/.well-known/oauth-protected-resource/mcp",
		"https://agents.example.com/":    "https://agents.example.com/.well-known/oauth-protected-resource/mcp",
		"https://example.com:8443/a2ad/": "https://example.com:8443/.well-known/oauth-protected-resource/a2ad/mcp",
		"http://127.0.0.1:8080":          "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp",
		"not a url":                      "",
	} {
		if got := MetadataURL(base, "/mcp"); got != want {
			t.Errorf("MetadataURL(%q) = %q, want %q", base, got, want)
		}
	}
	for _, tc := range []struct{ challenge, url, want string }{
		{`Bearer realm="a2ad"`, "https://h/m", `Bearer realm="a2ad", resource_metadata="https://h/m"`},
		{`Bearer realm="a2ad", error="invalid_token"`, "https://h/m", `Bearer realm="a2ad", error="invalid_token", resource_metadata="https://h/m"`},
		{`Bearer realm="a2ad"`, "", `Bearer realm="a2ad"`},
	} {
		if got := withResourceMetadata(tc.challenge, tc.url); got != tc.want {
			t.Errorf("withResourceMetadata(%q, %q) = %q, want %q", tc.challenge, tc.url, got, tc.want)
		}
	}
	doc := ResourceMetadata("https://h/mcp", "https://issuer.example")
	if want := `{"resource":"https://h/mcp","authorization_servers":["https://issuer.example"],"bearer_methods_supported":["header"],"resource_name":"a2ad MCP endpoint"}`; string(doc) != want {
		t.Errorf("document %s, want %s", doc, want)
	}
	h := MetadataHandler(doc)
	for method, status := range map[string]int{http.MethodGet: 200, http.MethodHead: 200, http.MethodPost: 405} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, "/.well-known/oauth-protected-resource/mcp", nil))
		if w.Code != status || (method == http.MethodGet && w.Body.String() != string(doc)) || (status == 200 && w.Header().Get("Content-Type") != "application/json") {
			t.Errorf("%s: %d %q %q", method, w.Code, w.Header().Get("Content-Type"), w.Body.String())
		}
	}
}
