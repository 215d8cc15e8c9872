package transport_test

import (
	"net/http/httptest"
	"testing"

	"github.com/a2ad/a2ad/transport"
)

// TestVersionAsked: the A2A-Version header in any case, else the query
// parameter; an empty header counts as none.
func TestVersionAsked(t *testing.T) {
	tests := []struct {
		url, header, want string
	}{
		{"/a2a", "", ""},
		{"/a2a", "1.0", "1.0"},
		{"/a2a?A2A-Version=1.0", "", "1.0"},
		{"/a2a?A2A-Version=1.0", "0.3", "0.3"},
		{"/a2a?other=1", "", ""},
	}
	for _, tc := range tests {
		for _, name := range []string{"A2A-Version", "a2a-version"} {
			r := httptest.NewRequest("POST", tc.url, nil)
			if tc.header != "" {
				r.Header.Set(name, tc.header)
			}
			if got := transport.VersionAsked(r); got != tc.want {
				t.Errorf("%s with %s: %q: got %q, want %q", tc.url, name, tc.header, got, tc.want)
			}
		}
	}
	r := httptest.NewRequest("POST", "/a2a?A2A-Version=1.0", nil)
	r.Header["A2a-Version"] = []string{""}
	if got := transport.VersionAsked(r); got != "1.0" {
		t.Errorf("empty header: got %q, want the query's 1.0", got)
	}
}

// TestIsJSON: JSON media types with or without parameters.
func TestIsJSON(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json": true, "application/json; charset=utf-8": true, "Application/JSON": true,
		"application/a2a+json": true, "text/json": false, "": false, "application/jsonx": false, "application/json;;": false,
	} {
		if got := transport.IsJSON(ct); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}
