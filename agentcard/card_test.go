package agentcard_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/agentcard"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/schemas"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fn is a function of the test catalogue: an echo builtin with the given
// id and metadata, and an input schema.
func fn(tb testing.TB, id string, meta map[string]any, schema string) *functions.Function {
	tb.Helper()
	if schema == "" {
		schema = `{"type":"object"}`
	}
	in, err := schemas.Compile(id+".json", []byte(schema))
	if err != nil {
		tb.Fatalf("compile schema of %s: %v", id, err)
	}
	b, err := functions.NewBuiltin("echo")
	if err != nil {
		tb.Fatal(err)
	}
	return &functions.Function{ID: id, Metadata: meta, Input: in, Timeout: functions.DefaultTimeout, Backend: b}
}

// testCatalog covers every exposure case: opted in per tier, several
// tiers, no tier, the opt-in as a string, an opt-out, and the hard floor.
func testCatalog(tb testing.TB) *functions.Catalog {
	tb.Helper()
	lookup := fn(tb, "orders::lookup", map[string]any{"a2a.expose": true, "a2a.tier": "partner"},
		`{"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}`)
	lookup.Name = "Order lookup"
	lookup.Description = "Finds an order by its number."
	lookup.Tags = []string{"orders", "read"}
	lookup.Examples = []string{`{"order": "A-1"}`}
	lookup.InputModes = []string{"application/json"}
	lookup.OutputModes = []string{"application/json", "text/plain"}

	// No name, description or tags: every default applies.
	quote := fn(tb, "pricing::quote", map[string]any{"a2a.expose": true, "a2a.tier": "internal"},
		`{"type":"object","properties":{"sku":{"type":"string"},"quantity":{"type":"integer","minimum":1}}}`)

	daily := fn(tb, "reports::daily", map[string]any{"a2a.expose": true, "a2a.tier": []any{"partner", "internal"}}, "")
	daily.Name = "Daily report"

	echo := fn(tb, "demo::echo", map[string]any{"a2a.expose": true}, "") // no tier metadata

	return functions.NewCatalog(
		lookup,
		quote,
		daily,
		fn(tb, "admin::reindex", map[string]any{"a2a.expose": "true", "a2a.tier": "internal"}, ""), // a string: not opted in
		fn(tb, "admin::purge", map[string]any{"a2a.expose": false}, ""),                            // opted out
		fn(tb, "engine::x", map[string]any{"a2a.expose": true}, ""),                                // hard floor
		fn(tb, "mcp::y", map[string]any{"a2a.expose": true, "a2a.tier": "partner"}, ""),            // hard floor
		fn(tb, "a2a::z", map[string]any{"a2a.expose": true, "a2a.tier": "internal"}, ""),           // hard floor
		echo,
	)
}

var floor = []string{"engine::x", "mcp::y", "a2a::z"}

func testIdentity() agentcard.Identity {
	return agentcard.Identity{
		Name:             "a2ad",
		Description:      "Operator functions as A2A skills.",
		Version:          "1.2.3",
		ProviderOrg:      "Example Org",
		ProviderURL:      "https://example.com",
		DocumentationURL: "https://example.com/docs",
	}
}

// views are the golden cases: the server's exposure flags.
var views = []struct {
	name     string
	policy   exposure.Policy
	want     []string // skill ids, in catalogue order
	tiers    []string
	security *agentcard.Security
}{
	{"default", exposure.Policy{}, []string{"orders::lookup", "pricing::quote", "reports::daily", "demo::echo"}, nil, nil},
	{"tier-partner", exposure.Policy{Tier: "partner"}, []string{"orders::lookup", "reports::daily"}, nil, nil},
	{"tier-internal", exposure.Policy{Tier: "internal"}, []string{"pricing::quote", "reports::daily"}, nil, nil},
	{"expose-all", exposure.Policy{ExposeAll: true},
		[]string{"orders::lookup", "pricing::quote", "reports::daily", "admin::reindex", "admin::purge", "demo::echo"}, nil, nil},
	{"expose-all-tier-partner", exposure.Policy{ExposeAll: true, Tier: "partner"}, []string{"orders::lookup", "reports::daily"}, nil, nil},
	// With API keys: a partner caller's extended card, and the public
	// card of a server that serves anonymous callers too.
	{"keys-caller-partner", exposure.Policy{}, []string{"orders::lookup", "reports::daily"},
		[]string{"partner"}, &agentcard.Security{APIKeys: true, ExtendedCard: true}},
	{"keys-anonymous-public", exposure.Policy{}, []string{},
		[]string{"public"}, &agentcard.Security{APIKeys: true, Anonymous: true, ExtendedCard: true}},
	// An OpenID Connect issuer's tokens, alone and beside API keys.
	{"oidc-caller-partner", exposure.Policy{}, []string{"orders::lookup", "reports::daily"},
		[]string{"partner"}, &agentcard.Security{OIDCIssuer: "https://id.example.com/", ExtendedCard: true}},
	{"keys-oidc-caller-partner", exposure.Policy{}, []string{"orders::lookup", "reports::daily"},
		[]string{"partner"}, &agentcard.Security{APIKeys: true, OIDCIssuer: "https://id.example.com", ExtendedCard: true}},
}

func mustBuild(tb testing.TB, cat *functions.Catalog, opts agentcard.Options) *agentcard.Card {
	tb.Helper()
	if opts.BaseURL == "" {
		opts.BaseURL = "https://agents.example.com"
	}
	c, err := agentcard.Build(cat, opts)
	if err != nil {
		tb.Fatalf("Build: %v", err)
	}
	return c
}

// decoded is the part of the card JSON the tests read.
type decoded struct {
	Skills []struct {
		ID   string   `json:"id"`
		Tags []string `json:"tags"`
	} `json:"skills"`
	Capabilities struct {
		Extensions []struct {
			URI    string                     `json:"uri"`
			Params map[string]json.RawMessage `json:"params"`
		} `json:"extensions"`
	} `json:"capabilities"`
}

func decode(tb testing.TB, card *agentcard.Card) decoded {
	tb.Helper()
	var d decoded
	if err := json.Unmarshal(card.JSON, &d); err != nil {
		tb.Fatalf("card is not JSON: %v\n%s", err, card.JSON)
	}
	return d
}

// schemaParams returns the schema extension's params.
func schemaParams(tb testing.TB, d decoded) map[string]json.RawMessage {
	tb.Helper()
	for _, e := range d.Capabilities.Extensions {
		if e.URI == agentcard.SchemaExtensionURI {
			return e.Params
		}
	}
	tb.Fatalf("card has no extension %s", agentcard.SchemaExtensionURI)
	return nil
}

func skillIDs(d decoded) []string {
	ids := []string{}
	for _, s := range d.Skills {
		ids = append(ids, s.ID)
	}
	return ids
}

func TestBuild_Golden(t *testing.T) {
	cat := testCatalog(t)
	for _, v := range views {
		t.Run(v.name, func(t *testing.T) {
			card := mustBuild(t, cat, agentcard.Options{Identity: testIdentity(), Policy: v.policy, CallerTiers: v.tiers, Security: v.security})
			var got bytes.Buffer
			if err := json.Indent(&got, card.JSON, "", "  "); err != nil {
				t.Fatal(err)
			}
			got.WriteByte('\n')
			path := filepath.Join("testdata", v.name+".golden.json")
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("card differs from %s (-want +got):\n%s", path, diff)
			}
		})
	}
}

func TestBuild_Exposure(t *testing.T) {
	cat := testCatalog(t)
	for _, v := range views {
		t.Run(v.name, func(t *testing.T) {
			card := mustBuild(t, cat, agentcard.Options{Identity: testIdentity(), Policy: v.policy, CallerTiers: v.tiers, Security: v.security})
			d := decode(t, card)
			if diff := cmp.Diff(v.want, skillIDs(d)); diff != "" {
				t.Errorf("skills (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(v.want, card.Skills); diff != "" {
				t.Errorf("Card.Skills (-want +got):\n%s", diff)
			}
			params := schemaParams(t, d)
			if len(params) != len(v.want) {
				t.Errorf("schema params have %d entries, want %d", len(params), len(v.want))
			}
			for _, f := range cat.Functions {
				exposed := slices.Contains(v.want, f.ID)
				if _, ok := params[f.ID]; ok != exposed {
					t.Errorf("schema params hold %s = %v, want %v", f.ID, ok, exposed)
				}
				// A hidden function must not show up anywhere in the card.
				if !exposed && bytes.Contains(card.JSON, []byte(f.ID)) {
					t.Errorf("hidden function %s appears in the card", f.ID)
				}
			}
			for _, id := range floor {
				if slices.Contains(card.Skills, id) {
					t.Errorf("hard-floor function %s is a skill", id)
				}
			}
		})
	}
}

func TestBuild_TierPartnerShowsOnlyPartnerSkills(t *testing.T) {
	cat := testCatalog(t)
	for _, p := range []exposure.Policy{{Tier: "partner"}, {Tier: "partner", ExposeAll: true}} {
		card := mustBuild(t, cat, agentcard.Options{Policy: p})
		for _, id := range card.Skills {
			f, _ := cat.Lookup(id)
			tier := f.Metadata[exposure.MetaTier]
			ok := tier == "partner"
			if list, isList := tier.([]any); isList {
				ok = slices.Contains(list, any("partner"))
			}
			if !ok {
				t.Errorf("policy %+v: skill %s has tier %v, want partner", p, id, tier)
			}
		}
		if len(card.Skills) == 0 {
			t.Errorf("policy %+v: no skills", p)
		}
	}
}

func TestBuild_ExposeAllKeepsFloor(t *testing.T) {
	cat := testCatalog(t)
	card := mustBuild(t, cat, agentcard.Options{Policy: exposure.Policy{ExposeAll: true}})
	for _, id := range floor {
		if slices.Contains(card.Skills, id) || bytes.Contains(card.JSON, []byte(id)) {
			t.Errorf("--expose-all exposes hard-floor function %s", id)
		}
	}
}

func TestBuild_ExtraPrefixes(t *testing.T) {
	cat := testCatalog(t)
	card := mustBuild(t, cat, agentcard.Options{Policy: exposure.Policy{ExposeAll: true, ExtraPrefixes: []string{"admin::", "orders::"}}})
	want := []string{"pricing::quote", "reports::daily", "demo::echo"}
	if diff := cmp.Diff(want, card.Skills); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
}

func TestBuild_CallerTier(t *testing.T) {
	cat := testCatalog(t)
	tests := []struct {
		serverTier  string
		callerTiers []string
		want        []string
	}{
		{"", []string{"partner"}, []string{"orders::lookup", "reports::daily"}},
		{"", []string{"internal"}, []string{"pricing::quote", "reports::daily"}},
		{"", []string{"partner", "internal"}, []string{"orders::lookup", "pricing::quote", "reports::daily"}},
		{"internal", []string{"partner"}, []string{"reports::daily"}}, // the server's tier caps the caller's
		{"partner", nil, []string{"orders::lookup", "reports::daily"}},
	}
	for _, tt := range tests {
		card := mustBuild(t, cat, agentcard.Options{Policy: exposure.Policy{Tier: tt.serverTier}, CallerTiers: tt.callerTiers})
		if diff := cmp.Diff(tt.want, card.Skills); diff != "" {
			t.Errorf("server tier %q, caller tiers %q: skills (-want +got):\n%s", tt.serverTier, tt.callerTiers, diff)
		}
	}
}

// rawCard decodes the card into a generic map, to check which keys are
// present.
func rawCard(tb testing.TB, card *agentcard.Card) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(card.JSON, &m); err != nil {
		tb.Fatal(err)
	}
	return m
}

func TestBuild_Fields(t *testing.T) {
	card := mustBuild(t, testCatalog(t), agentcard.Options{
		Identity: agentcard.Identity{Name: "a2ad", Description: "d", Version: "v9"},
		BaseURL:  "http://127.0.0.1:8080",
	})
	m := rawCard(t, card)
	endpoint := "http://127.0.0.1:8080/a2a"
	checks := map[string]any{
		"protocolVersion":    "0.3.0",
		"name":               "a2ad",
		"description":        "d",
		"version":            "v9",
		"url":                endpoint,
		"preferredTransport": "JSONRPC",
		"additionalInterfaces": []any{
			map[string]any{"url": endpoint, "transport": "JSONRPC"},
		},
		"supportedInterfaces": []any{
			map[string]any{"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
			map[string]any{"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
		},
		"defaultInputModes":                 []any{"application/json", "text/plain"},
		"defaultOutputModes":                []any{"application/json", "text/plain"},
		"supportsAuthenticatedExtendedCard": false,
	}
	for k, want := range checks {
		if diff := cmp.Diff(want, m[k]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
	caps, _ := m["capabilities"].(map[string]any)
	for _, k := range []string{"streaming", "pushNotifications", "stateTransitionHistory", "extendedAgentCard"} {
		if v, ok := caps[k]; !ok || v != false {
			t.Errorf("capabilities.%s = %v (present %v), want false", k, v, ok)
		}
	}
	for _, k := range []string{"provider", "documentationUrl", "iconUrl"} {
		if _, ok := m[k]; ok {
			t.Errorf("card has %s, want it omitted when empty", k)
		}
	}
}

func TestBuild_Capabilities(t *testing.T) {
	card := mustBuild(t, nil, agentcard.Options{Capabilities: agentcard.Capabilities{Streaming: true, PushNotifications: true}})
	caps := rawCard(t, card)["capabilities"].(map[string]any)
	if caps["streaming"] != true || caps["pushNotifications"] != true {
		t.Errorf("capabilities = %v, want streaming and pushNotifications true", caps)
	}
}

func TestBuild_Provider(t *testing.T) {
	tests := []struct {
		org, url string
		want     any
	}{
		{"", "", nil},
		{"Example Org", "", nil},
		{"", "https://example.com", nil},
		{"Example Org", "https://example.com", map[string]any{"organization": "Example Org", "url": "https://example.com"}},
	}
	for _, tt := range tests {
		card := mustBuild(t, nil, agentcard.Options{Identity: agentcard.Identity{ProviderOrg: tt.org, ProviderURL: tt.url}})
		got, present := rawCard(t, card)["provider"]
		if present != (tt.want != nil) {
			t.Errorf("org %q url %q: provider present = %v, want %v", tt.org, tt.url, present, tt.want != nil)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("org %q url %q: provider (-want +got):\n%s", tt.org, tt.url, diff)
		}
	}
}

func TestBuild_DocumentationAndIcon(t *testing.T) {
	card := mustBuild(t, nil, agentcard.Options{Identity: agentcard.Identity{
		DocumentationURL: "https://example.com/docs", IconURL: "https://example.com/icon.png",
	}})
	m := rawCard(t, card)
	if m["documentationUrl"] != "https://example.com/docs" || m["iconUrl"] != "https://example.com/icon.png" {
		t.Errorf("documentationUrl = %v, iconUrl = %v", m["documentationUrl"], m["iconUrl"])
	}
}

func TestBuild_Skills(t *testing.T) {
	card := mustBuild(t, testCatalog(t), agentcard.Options{})
	var c struct {
		Skills []map[string]any `json:"skills"`
	}
	if err := json.Unmarshal(card.JSON, &c); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, s := range c.Skills {
		got[s["id"].(string)] = s
	}
	want := map[string]map[string]any{
		// Everything declared.
		"orders::lookup": {
			"id": "orders::lookup", "name": "Order lookup", "description": "Finds an order by its number.",
			"tags": []any{"orders", "read"}, "examples": []any{`{"order": "A-1"}`},
			"inputModes": []any{"application/json"}, "outputModes": []any{"application/json", "text/plain"},
		},
		// Nothing declared: name from the id, description from the name,
		// tags from the id split on "::", no modes (the card's defaults).
		"pricing::quote": {
			"id": "pricing::quote", "name": "pricing quote", "description": "pricing quote",
			"tags": []any{"pricing", "quote"},
		},
		"reports::daily": {
			"id": "reports::daily", "name": "Daily report", "description": "Daily report",
			"tags": []any{"reports", "daily"},
		},
		"demo::echo": {"id": "demo::echo", "name": "demo echo", "description": "demo echo", "tags": []any{"demo", "echo"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
}

func TestBuild_TagsFromID(t *testing.T) {
	tests := []struct {
		id   string
		tags []string
		want []string
	}{
		{"pricing::quote", nil, []string{"pricing", "quote"}},
		{"a::b::c", nil, []string{"a", "b", "c"}},
		{"plain", nil, []string{"plain"}},
		{"pricing::quote", []string{}, []string{"pricing", "quote"}},
		{"pricing::quote", []string{"money"}, []string{"money"}},
	}
	for _, tt := range tests {
		f := fn(t, tt.id, map[string]any{"a2a.expose": true}, "")
		f.Tags = tt.tags
		d := decode(t, mustBuild(t, functions.NewCatalog(f), agentcard.Options{}))
		if len(d.Skills) != 1 {
			t.Fatalf("%s: %d skills, want 1", tt.id, len(d.Skills))
		}
		if diff := cmp.Diff(tt.want, d.Skills[0].Tags); diff != "" {
			t.Errorf("%s with tags %q: tags (-want +got):\n%s", tt.id, tt.tags, diff)
		}
	}
}

func TestBuild_SchemaExtension(t *testing.T) {
	cat := testCatalog(t)
	d := decode(t, mustBuild(t, cat, agentcard.Options{}))
	params := schemaParams(t, d)
	for _, id := range skillIDs(d) {
		f, _ := cat.Lookup(id)
		got, ok := params[id]
		if !ok {
			t.Errorf("schema params lack skill %s", id)
			continue
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, got); err != nil {
			t.Fatal(err)
		}
		if compact.String() != string(f.Input.JSON()) {
			t.Errorf("schema of %s = %s, want %s", id, compact.String(), f.Input.JSON())
		}
	}
}

func TestBuild_NoCatalog(t *testing.T) {
	card := mustBuild(t, nil, agentcard.Options{})
	if len(card.Skills) != 0 {
		t.Errorf("Skills = %v, want none", card.Skills)
	}
	skills, ok := rawCard(t, card)["skills"].([]any)
	if !ok || len(skills) != 0 {
		t.Errorf(`"skills" = %v, want []`, rawCard(t, card)["skills"])
	}
}

func TestBuild_NoBaseURL(t *testing.T) {
	if _, err := agentcard.Build(nil, agentcard.Options{}); err == nil {
		t.Error("Build with no base URL: got nil error")
	}
}

func TestBuild_ETag(t *testing.T) {
	opts := agentcard.Options{Identity: testIdentity()}
	a := mustBuild(t, testCatalog(t), opts)
	b := mustBuild(t, testCatalog(t), opts)
	if a.ETag != b.ETag {
		t.Errorf("ETag differs for the same input: %s, %s", a.ETag, b.ETag)
	}
	if !regexp.MustCompile(`^"[0-9a-f]+"$`).MatchString(a.ETag) {
		t.Errorf("ETag %s is not a quoted string of hex digits", a.ETag)
	}

	changed := testCatalog(t)
	f, _ := changed.Lookup("pricing::quote")
	f.Description = "Prices an order."
	if c := mustBuild(t, changed, opts); c.ETag == a.ETag {
		t.Error("ETag unchanged after a skill's description changed")
	}
	if c := mustBuild(t, testCatalog(t), agentcard.Options{Identity: testIdentity(), Policy: exposure.Policy{Tier: "partner"}}); c.ETag == a.ETag {
		t.Error("ETag unchanged after the set of skills changed")
	}
}

func TestNormalizeBaseURL(t *testing.T) {
	ok := []struct{ in, want string }{
		{"http://example.com/", "http://example.com"},
		{"https://x.y/base///", "https://x.y/base"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"  https://x.y/a/  ", "https://x.y/a"},
		{"http://[::1]:8080/", "http://[::1]:8080"},
	}
	for _, tt := range ok {
		got, err := agentcard.NormalizeBaseURL(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("NormalizeBaseURL(%q) = %q, %v, want %q, nil", tt.in, got, err, tt.want)
		}
	}
	bad := []struct{ in, want string }{
		{"", `base URL "" must be an absolute http(s) URL`},
		{"example.com", `base URL "example.com" must be an absolute http(s) URL`},
		{"ftp://x", `base URL "ftp://x" must be an absolute http(s) URL`},
		{"/relative", `base URL "/relative" must be an absolute http(s) URL`},
		{"http://", `base URL "http://" has no host`},
		{"http://x?q=1", `base URL "http://x?q=1" must not have a query or fragment`},
		{"http://x/base?", `base URL "http://x/base?" must not have a query or fragment`},
		{"http://x#f", `base URL "http://x#f" must not have a query or fragment`},
		// The password is never printed.
		{"http://user:pw@x", `base URL "http://user:xxxxx@x" must not hold credentials`},
		{"http://user:pw@x?q", `base URL "http://user:xxxxx@x?q" must not have a query or fragment`},
		{"http://0.0.0.0:8080", `base URL "http://0.0.0.0:8080" names a bind-all address, which clients cannot reach`},
		{"http://[::]:8080", `base URL "http://[::]:8080" names a bind-all address, which clients cannot reach`},
	}
	for _, tt := range bad {
		got, err := agentcard.NormalizeBaseURL(tt.in)
		if err == nil {
			t.Errorf("NormalizeBaseURL(%q) = %q, nil, want error %q", tt.in, got, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("NormalizeBaseURL(%q) error = %q, want %q", tt.in, err, tt.want)
		}
	}
}

// TestBuild_OfficialClient decodes the card with the a2a-go client's type.
func TestBuild_OfficialClient(t *testing.T) {
	card := mustBuild(t, testCatalog(t), agentcard.Options{
		Identity: testIdentity(), BaseURL: "https://agents.example.com", Policy: exposure.Policy{Tier: "partner"},
	})
	var c a2a.AgentCard
	if err := json.Unmarshal(card.JSON, &c); err != nil {
		t.Fatalf("a2a.AgentCard cannot decode the card: %v", err)
	}
	if c.URL != "https://agents.example.com/a2a" {
		t.Errorf("URL = %q", c.URL)
	}
	if c.PreferredTransport != a2a.TransportProtocolJSONRPC {
		t.Errorf("PreferredTransport = %q, want %q", c.PreferredTransport, a2a.TransportProtocolJSONRPC)
	}
	if c.ProtocolVersion != "0.3.0" {
		t.Errorf("ProtocolVersion = %q", c.ProtocolVersion)
	}
	var ids []string
	for _, s := range c.Skills {
		ids = append(ids, s.ID)
	}
	if diff := cmp.Diff([]string{"orders::lookup", "reports::daily"}, ids); diff != "" {
		t.Errorf("skill ids (-want +got):\n%s", diff)
	}
	if c.Provider == nil || c.Provider.Org != "Example Org" || c.Provider.URL != "https://example.com" {
		t.Errorf("Provider = %+v", c.Provider)
	}
	if len(c.Capabilities.Extensions) != 1 || c.Capabilities.Extensions[0].URI != agentcard.SchemaExtensionURI {
		t.Fatalf("extensions = %+v", c.Capabilities.Extensions)
	}
	if _, ok := c.Capabilities.Extensions[0].Params["orders::lookup"]; !ok {
		t.Errorf("schema extension params lack orders::lookup: %v", c.Capabilities.Extensions[0].Params)
	}
}

// TestBuild_Interfaces: the card lists each binding that is on, 1.0
// first, and its 1.0 form (V1JSON) holds the 1.0 fields only, with the
// security schemes in their ProtoJSON shapes.
func TestBuild_Interfaces(t *testing.T) {
	card := mustBuild(t, testCatalog(t), agentcard.Options{
		BaseURL: "https://a.example", RESTPath: "/a2a/rest", GRPCAddr: "a.example:50051",
		Security: &agentcard.Security{APIKeys: true, OIDCIssuer: "https://id.example", Anonymous: true, ExtendedCard: true},
	})
	var merged struct{ SupportedInterfaces []map[string]string }
	if err := json.Unmarshal(card.JSON, &merged); err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{
		{"url": "https://a.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
		{"url": "https://a.example/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
		{"url": "a.example:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
		{"url": "https://a.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
	}
	if diff := cmp.Diff(want, merged.SupportedInterfaces); diff != "" {
		t.Errorf("supportedInterfaces (-want +got):\n%s", diff)
	}
	var v1 map[string]any
	if err := json.Unmarshal(card.V1JSON, &v1); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"protocolVersion", "url", "preferredTransport", "additionalInterfaces", "supportsAuthenticatedExtendedCard", "security"} {
		if _, ok := v1[k]; ok {
			t.Errorf("V1JSON has the 0.3 field %s", k)
		}
	}
	got, _ := json.Marshal(map[string]any{"s": v1["securitySchemes"], "r": v1["securityRequirements"]})
	// No securityRequirements: see v1Card.
	const wantSec = `{"r":null,` +
		`"s":{"apiKey":{"apiKeySecurityScheme":{"description":"An a2ad API key in the X-API-Key header","location":"header","name":"X-API-Key"}},` +
		`"bearer":{"httpAuthSecurityScheme":{"description":"An a2ad API key as a bearer token: Authorization: Bearer \u003ckey\u003e","scheme":"bearer"}},` +
		`"oidc":{"openIdConnectSecurityScheme":{"description":"A JWT of this OpenID Connect issuer as a bearer token: Authorization: Bearer \u003cjwt\u003e","openIdConnectUrl":"https://id.example/.well-known/openid-configuration"}}}}`
	if string(got) != wantSec {
		t.Errorf("V1JSON security:\n got %s\nwant %s", got, wantSec)
	}
}
