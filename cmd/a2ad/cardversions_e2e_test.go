package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/agentcard"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/config"
	"github.com/a2ad/a2ad/internal/testkit"
)

// v03Fields are the members only a 0.3 card has.
var v03Fields = []string{"url", "preferredTransport", "protocolVersion", "additionalInterfaces", "supportsAuthenticatedExtendedCard"}

// fetchCard GETs the card at path (with its query) with header and
// returns the answer and the decoded card (nil when not 200).
func fetchCard(t *testing.T, base, path string, header http.Header) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, body := testkit.RoundTrip(t, nil, req)
	if resp.StatusCode != http.StatusOK {
		return resp, nil
	}
	var card map[string]any
	if err := json.Unmarshal(body, &card); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return resp, card
}

// cardForm says which of the 0.3 and 1.0 members card has.
func cardForm(card map[string]any) (has03, has10 []string) {
	for _, k := range v03Fields {
		if _, ok := card[k]; ok {
			has03 = append(has03, k)
		}
	}
	caps, _ := card["capabilities"].(map[string]any)
	if _, ok := caps["stateTransitionHistory"]; ok {
		has03 = append(has03, "capabilities.stateTransitionHistory")
	}
	if _, ok := card["supportedInterfaces"]; ok {
		has10 = append(has10, "supportedInterfaces")
	}
	if _, ok := caps["extendedAgentCard"]; ok {
		has10 = append(has10, "capabilities.extendedAgentCard")
	}
	return has03, has10
}

// TestCardPerVersion: by default the well-known card is the merged one,
// and the pure 1.0 card to a request that asks for 1.0 (header or query
// parameter), with Vary: A2A-Version, an ETag of its own, and
// Last-Modified; If-None-Match and If-Modified-Since answer 304.
// --card-versions 1.0 and 0.3 serve that card alone.
func TestCardPerVersion(t *testing.T) {
	m := startMain(t, nil)
	base := "http://" + m.Addr()
	const path = "/.well-known/agent-card.json"
	merged, mc := fetchCard(t, base, path, nil)
	if has03, has10 := cardForm(mc); len(has03) != 6 || len(has10) != 2 {
		t.Fatalf("the default card: 0.3 members %v, 1.0 members %v", has03, has10)
	}
	if merged.Header.Get("Vary") != "A2A-Version" || merged.Header.Get("ETag") == "" {
		t.Fatalf("the default card's headers: %v", merged.Header)
	}
	lm, err := http.ParseTime(merged.Header.Get("Last-Modified"))
	if err != nil || time.Since(lm) > time.Minute || time.Since(lm) < 0 {
		t.Fatalf("Last-Modified %q: %v", merged.Header.Get("Last-Modified"), err)
	}
	var v1ETag string
	for _, ask := range []struct {
		path   string
		header http.Header
	}{{path, http.Header{"A2A-Version": {"1.0"}}}, {path + "?A2A-Version=1.0", nil}, {"/.well-known/agent.json", http.Header{"A2A-Version": {"1.0"}}}} {
		resp, v1 := fetchCard(t, base, ask.path, ask.header)
		if has03, has10 := cardForm(v1); v1 == nil || len(has03) != 0 || len(has10) != 2 {
			t.Fatalf("%s %v: 0.3 members %v, 1.0 members %v", ask.path, ask.header, has03, has10)
		}
		if v1ETag = resp.Header.Get("ETag"); v1ETag == merged.Header.Get("ETag") || v1ETag == "" || resp.Header.Get("Vary") != "A2A-Version" {
			t.Fatalf("%s: the 1.0 card's headers %v, the merged card's ETag %s", ask.path, resp.Header, merged.Header.Get("ETag"))
		}
	}
	if _, c := fetchCard(t, base, path, http.Header{"A2A-Version": {"0.3"}}); len(c["url"].(string)) == 0 {
		t.Fatalf("the card asked for 0.3: %v", c)
	}
	for name, c := range map[string]struct {
		header http.Header
		want   int
	}{
		"the 1.0 ETag":                  {http.Header{"A2A-Version": {"1.0"}, "If-None-Match": {v1ETag}}, http.StatusNotModified},
		"the 1.0 ETag, no version":      {http.Header{"If-None-Match": {v1ETag}}, http.StatusOK},
		"If-Modified-Since now":         {http.Header{"If-Modified-Since": {merged.Header.Get("Last-Modified")}}, http.StatusNotModified},
		"If-Modified-Since before":      {http.Header{"If-Modified-Since": {lm.Add(-time.Second).Format(http.TimeFormat)}}, http.StatusOK},
		"If-None-Match over the date":   {http.Header{"If-None-Match": {`"other"`}, "If-Modified-Since": {merged.Header.Get("Last-Modified")}}, http.StatusOK},
		"If-Modified-Since not a date":  {http.Header{"If-Modified-Since": {"yesterday"}}, http.StatusOK},
		"If-Modified-Since, asking 1.0": {http.Header{"A2A-Version": {"1.0"}, "If-Modified-Since": {merged.Header.Get("Last-Modified")}}, http.StatusNotModified},
	} {
		if resp, _ := fetchCard(t, base, path, c.header); resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", name, resp.StatusCode, c.want)
		}
	}

	// With CORS on, the public card is open to every origin and still
	// varies on the version.
	cors := startMain(t, func(c *Config) { c.CORSOrigins = "https://app.example" })
	resp, _ := fetchCard(t, "http://"+cors.Addr(), path, http.Header{"Origin": {"https://other.example"}})
	if v := resp.Header.Values("Vary"); !slices.Equal(v, []string{"A2A-Version"}) || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("with CORS: Vary %q, Access-Control-Allow-Origin %q", v, resp.Header.Get("Access-Control-Allow-Origin"))
	}

	for _, v := range []struct {
		versions       string
		want03, want10 int
	}{{"1.0", 0, 2}, {"0.3", 6, 0}} {
		only := startMain(t, func(c *Config) { c.A2A.CardVersions, _ = agentcard.ParseVersions(v.versions) })
		for _, h := range []http.Header{nil, {"A2A-Version": {"1.0"}}, {"A2A-Version": {"0.3"}}} {
			resp, c := fetchCard(t, "http://"+only.Addr(), path, h)
			has03, has10 := cardForm(c)
			if len(has03) != v.want03 || len(has10) != v.want10 || resp.Header.Get("Vary") != "" {
				t.Errorf("--card-versions %s, %v: 0.3 members %v, 1.0 members %v, Vary %q", v.versions, h, has03, has10, resp.Header.Get("Vary"))
			}
		}
	}
	for _, bad := range []string{"", "1.1", "0.3,2"} {
		if _, err := agentcard.ParseVersions(bad); err == nil {
			t.Errorf("ParseVersions(%q) took it", bad)
		}
	}
	if _, _, err := config.Parse("serve", []string{"--card-versions", "0.2"}, func(string) (string, bool) { return "", false }, nil); err == nil ||
		!strings.HasPrefix(err.Error(), `a2ad serve: invalid value "0.2" for flag --card-versions: unknown version "0.2": the card speaks 0.3, 1.0 or both (0.3,1.0)`+"\n") {
		t.Errorf("--card-versions 0.2: %v", err)
	}
}
