package mcp

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// ResourceMetadataPath is where the OAuth 2.0 protected-resource metadata
// (RFC 9728) of an MCP endpoint at path is served: the well-known prefix
// inserted before the endpoint's path (§3.1), "/mcp" giving
// "/.well-known/oauth-protected-resource/mcp".
func ResourceMetadataPath(path string) string {
	return "/.well-known/oauth-protected-resource" + path
}

// ResourceMetadata is the protected-resource metadata document (RFC 9728
// §2) of the MCP endpoint at resource, whose tokens issuer (an OpenID
// Connect issuer) grants: what an MCP client reads to find where to get
// one. Tokens are taken in the Authorization header only.
func ResourceMetadata(resource, issuer string) []byte {
	b, _ := json.Marshal(struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
		ResourceName           string   `json:"resource_name"`
	}{resource, []string{issuer}, []string{"header"}, "a2ad MCP endpoint"})
	return b
}

// MetadataHandler serves doc, a ResourceMetadata document, to GET and
// HEAD (405 otherwise); it is public, as the card is.
func MetadataHandler(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(doc)
		}
	})
}

// withResourceMetadata is challenge, a 401's WWW-Authenticate, naming
// where the protected-resource metadata is (RFC 9728 §5.1), so that an
// MCP client finds the authorization server; challenge itself when there
// is none.
func withResourceMetadata(challenge, metadataURL string) string {
	if metadataURL == "" || !strings.HasPrefix(challenge, "Bearer") {
		return challenge
	}
	return challenge + `, resource_metadata="` + metadataURL + `"`
}

// MetadataURL is the URL of the metadata of the endpoint at base+path, a
// base URL of scheme and host (and perhaps a path of its own, which comes
// after the well-known prefix too).
func MetadataURL(base, path string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + ResourceMetadataPath(strings.TrimSuffix(u.Path, "/")+path)
}
