package agentcard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
)

// SchemaExtensionURI identifies the card extension that publishes each
// skill's input JSON Schema: its params (SkillInputSchemas) map skill id
// to schema.
const SchemaExtensionURI = "https://github.com/a2ad/a2ad/extensions/skill-input-schemas/v1"

// SkillInputSchemas are the params of the SchemaExtensionURI extension:
// the input JSON Schema (2020-12) of each skill the card lists that has
// one, by skill id. docs/reference/card-extension.schema.json is
// generated from this type.
type SkillInputSchemas map[string]json.RawMessage

// DefaultModes are the media types skills accept and produce unless a
// function says otherwise.
var DefaultModes = []string{"application/json", "text/plain"}

// Identity is who the agent says it is.
type Identity struct {
	Name             string
	Description      string
	Version          string
	ProviderOrg      string
	ProviderURL      string
	DocumentationURL string
	IconURL          string
}

// Capabilities are the optional protocol features that work. Claim only
// what works.
type Capabilities struct {
	Streaming         bool
	PushNotifications bool
}

// Options says how to build a card.
type Options struct {
	Identity    Identity
	BaseURL     string // normalised, see NormalizeBaseURL
	Policy      exposure.Policy
	CallerTiers []string // the viewer's tiers; none for no caller tier
	// NoSkills lists no skill: the public card of a server that serves
	// only callers with a key.
	NoSkills     bool
	Capabilities Capabilities
	// Security declares how callers authenticate; nil for a server that
	// asks no credentials.
	Security *Security
	// RESTPath is the base path of the HTTP+JSON binding below BaseURL
	// ("/a2a/rest"); "" when it is off.
	RESTPath string
	// GRPCAddr is the host:port of the gRPC binding; "" when it is off.
	GRPCAddr string
	// Versions are the versions the card speaks; the zero value both.
	Versions Versions
}

// Security is how a2ad's callers authenticate: an API key, sent as a
// bearer token or in the X-API-Key header, or a token of an OpenID Connect
// issuer.
type Security struct {
	// APIKeys says that callers may present an API key.
	APIKeys bool
	// OIDCIssuer is the issuer whose tokens callers may present (as
	// bearer tokens); "" for none.
	OIDCIssuer string
	// Anonymous says that callers without a key are served too (with
	// the anonymous view).
	Anonymous bool
	// ExtendedCard says that agent/getAuthenticatedExtendedCard returns
	// the caller's own view.
	ExtendedCard bool
}

// The security scheme names the card declares.
const (
	SchemeBearer = "bearer"
	SchemeAPIKey = "apiKey"
	SchemeOIDC   = "oidc"
)

// securityScheme is a security scheme in both its forms at once: the 0.3
// (OpenAPI-style) members, which a 0.3 client reads by "type", and the
// 1.0 one-of member (httpAuthSecurityScheme and the others), which a 1.0
// client reads. Each generation's decoder skips the other's members
// (a2a-go v0.3 and v2, the JS SDK), so that the merged card resolves with
// the default resolvers of both.
type securityScheme struct {
	Type         string `json:"type"`
	Description  string `json:"description,omitempty"`
	Scheme       string `json:"scheme,omitempty"`
	BearerFormat string `json:"bearerFormat,omitempty"`
	In           string `json:"in,omitempty"`
	Name         string `json:"name,omitempty"`
	// OpenIDConnectURL is an openIdConnect scheme's discovery document.
	OpenIDConnectURL string `json:"openIdConnectUrl,omitempty"`

	HTTPAuth *v1Scheme `json:"httpAuthSecurityScheme,omitempty"`
	APIKey   *v1Scheme `json:"apiKeySecurityScheme,omitempty"`
	OIDC     *v1Scheme `json:"openIdConnectSecurityScheme,omitempty"`
}

// v1Scheme holds the members of the 1.0 schemes a2ad declares.
type v1Scheme struct {
	Description      string `json:"description,omitempty"`
	Scheme           string `json:"scheme,omitempty"`
	Location         string `json:"location,omitempty"`
	Name             string `json:"name,omitempty"`
	OpenIDConnectURL string `json:"openIdConnectUrl,omitempty"`
}

// withV1 is sc with its 1.0 member.
func (sc securityScheme) withV1() securityScheme {
	v := &v1Scheme{Description: sc.Description}
	switch sc.Type {
	case "http":
		v.Scheme, sc.HTTPAuth = sc.Scheme, v
	case "apiKey":
		v.Location, v.Name, sc.APIKey = sc.In, sc.Name, v
	case "openIdConnect":
		v.OpenIDConnectURL, sc.OIDC = sc.OpenIDConnectURL, v
	}
	return sc
}

// Card is a built card: its JSON and the ETag that names it.
type Card struct {
	// JSON is the card as served by default: the merged card (0.3 and
	// 1.0 fields, which both generations read), or the one form that
	// Options.Versions names.
	JSON []byte
	// V1JSON is the card as a 1.0 AgentCard alone (ProtoJSON of
	// lf.a2a.v1.AgentCard): without the 0.3 fields, securitySchemes in
	// their 1.0 form, with securityRequirements. GetExtendedAgentCard
	// answers it over every 1.0 binding, since a 1.0 client reads the
	// answer as an AgentCard (the well-known document stays the merged
	// JSON, which both generations read).
	V1JSON []byte
	// ByVersion says that a request that asks for 1.0 gets V1JSON, and
	// the others JSON.
	ByVersion bool
	ETag      string
	Skills    []string // the ids of the skills it lists
}

type agentInterface struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

type supportedInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

type provider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

type extension struct {
	URI         string            `json:"uri"`
	Description string            `json:"description,omitempty"`
	Required    bool              `json:"required"`
	Params      SkillInputSchemas `json:"params,omitempty"`
}

type capabilities struct {
	Streaming              bool        `json:"streaming"`
	PushNotifications      bool        `json:"pushNotifications"`
	StateTransitionHistory bool        `json:"stateTransitionHistory"`
	ExtendedAgentCard      bool        `json:"extendedAgentCard"`
	Extensions             []extension `json:"extensions"`
}

type skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}

// agentCard holds the 0.3 fields and, alongside, the 1.0 ones
// (supportedInterfaces, capabilities.extendedAgentCard), so that both
// generations of clients can read one document.
type agentCard struct {
	ProtocolVersion                   string                    `json:"protocolVersion"`
	Name                              string                    `json:"name"`
	Description                       string                    `json:"description"`
	URL                               string                    `json:"url"`
	PreferredTransport                string                    `json:"preferredTransport"`
	AdditionalInterfaces              []agentInterface          `json:"additionalInterfaces"`
	SupportedInterfaces               []supportedInterface      `json:"supportedInterfaces"`
	Provider                          *provider                 `json:"provider,omitempty"`
	Version                           string                    `json:"version"`
	DocumentationURL                  string                    `json:"documentationUrl,omitempty"`
	IconURL                           string                    `json:"iconUrl,omitempty"`
	Capabilities                      capabilities              `json:"capabilities"`
	DefaultInputModes                 []string                  `json:"defaultInputModes"`
	DefaultOutputModes                []string                  `json:"defaultOutputModes"`
	Skills                            []skill                   `json:"skills"`
	SecuritySchemes                   map[string]securityScheme `json:"securitySchemes,omitempty"`
	Security                          []map[string][]string     `json:"security,omitempty"`
	SupportsAuthenticatedExtendedCard bool                      `json:"supportsAuthenticatedExtendedCard"`
}

// NormalizeBaseURL checks that raw is an absolute http(s) URL and drops
// trailing slashes. Query strings and fragments are refused: the card's
// endpoint is the base plus "/a2a".
func NormalizeBaseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("base URL %q is not a URL: %w", raw, err)
	}
	shown := raw
	if u.User != nil {
		shown = u.Redacted() // never print a password
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("base URL %q must be an absolute http(s) URL", shown)
	}
	if u.Host == "" {
		return "", fmt.Errorf("base URL %q has no host", shown)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", fmt.Errorf("base URL %q must not have a query or fragment", shown)
	}
	if u.User != nil {
		return "", fmt.Errorf("base URL %q must not hold credentials", shown)
	}
	if h := u.Hostname(); h == "0.0.0.0" || h == "::" {
		return "", fmt.Errorf("base URL %q names a bind-all address, which clients cannot reach", shown)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// interfaces are the card's supportedInterfaces: each binding that is
// on, 1.0 first (a 1.0 client prefers the first interface it speaks),
// JSON-RPC first among them; then JSON-RPC for 0.3.
func interfaces(endpoint string, opts Options) []supportedInterface {
	list := []supportedInterface{{URL: endpoint, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}}
	if opts.RESTPath != "" {
		list = append(list, supportedInterface{URL: opts.BaseURL + opts.RESTPath, ProtocolBinding: "HTTP+JSON", ProtocolVersion: "1.0"})
	}
	if opts.GRPCAddr != "" {
		list = append(list, supportedInterface{URL: opts.GRPCAddr, ProtocolBinding: "GRPC", ProtocolVersion: "1.0"})
	}
	return append(list, supportedInterface{URL: endpoint, ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"})
}

// Build builds the card of the functions of cat that opts' policy exposes
// to the viewer. A nil catalogue gives a card with no skills.
func Build(cat *functions.Catalog, opts Options) (*Card, error) {
	if opts.BaseURL == "" {
		return nil, errors.New("build agent card: no base URL")
	}
	endpoint := opts.BaseURL + "/a2a"
	id := opts.Identity
	c := agentCard{
		ProtocolVersion:      "0.3.0",
		Name:                 id.Name,
		Description:          id.Description,
		URL:                  endpoint,
		PreferredTransport:   "JSONRPC",
		AdditionalInterfaces: []agentInterface{{URL: endpoint, Transport: "JSONRPC"}},
		SupportedInterfaces:  interfaces(endpoint, opts),
		Version:              id.Version,
		DocumentationURL:     id.DocumentationURL,
		IconURL:              id.IconURL,
		Capabilities: capabilities{
			Streaming:         opts.Capabilities.Streaming,
			PushNotifications: opts.Capabilities.PushNotifications,
		},
		DefaultInputModes:  DefaultModes,
		DefaultOutputModes: DefaultModes,
		Skills:             []skill{},
	}
	if opts.Security != nil {
		c.secure(opts.Security)
	}
	if id.ProviderOrg != "" && id.ProviderURL != "" {
		c.Provider = &provider{Organization: id.ProviderOrg, URL: id.ProviderURL}
	}
	schemas := SkillInputSchemas{}
	ids := []string{}
	if cat != nil && !opts.NoSkills {
		for _, f := range cat.Functions {
			if !opts.Policy.DecideFor(f.ID, f.Metadata, opts.CallerTiers).Exposed {
				continue
			}
			c.Skills = append(c.Skills, skillOf(f))
			ids = append(ids, f.ID)
			if f.Input != nil {
				schemas[f.ID] = f.Input.JSON()
			}
		}
	}
	c.Capabilities.Extensions = []extension{{
		URI:         SchemaExtensionURI,
		Description: "The input JSON Schema of each skill, by skill id. Call a skill with a data part {\"skill\": id, \"input\": {...}}.",
		Params:      schemas,
	}}
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode agent card: %w", err)
	}
	v1, err := v1Card(body)
	if err != nil {
		return nil, fmt.Errorf("encode agent card: %w", err)
	}
	served, byVersion, err := opts.Versions.served(body, v1)
	if err != nil {
		return nil, fmt.Errorf("encode agent card: %w", err)
	}
	// The ETag names both forms: V1JSON follows from the merged card.
	sum := sha256.Sum256(append(body, opts.Versions.String()...))
	return &Card{JSON: served, V1JSON: v1, ByVersion: byVersion, ETag: `"` + hex.EncodeToString(sum[:12]) + `"`, Skills: ids}, nil
}

// secure declares how callers authenticate, as sec says.
func (c *agentCard) secure(sec *Security) {
	c.SecuritySchemes = map[string]securityScheme{}
	if sec.APIKeys {
		c.SecuritySchemes[SchemeBearer] = securityScheme{Type: "http", Scheme: "bearer", Description: "An a2ad API key as a bearer token: Authorization: Bearer <key>"}
		c.SecuritySchemes[SchemeAPIKey] = securityScheme{Type: "apiKey", In: "header", Name: "X-API-Key", Description: "An a2ad API key in the X-API-Key header"}
		c.Security = append(c.Security, map[string][]string{SchemeBearer: {}}, map[string][]string{SchemeAPIKey: {}})
	}
	if sec.OIDCIssuer != "" {
		c.SecuritySchemes[SchemeOIDC] = securityScheme{Type: "openIdConnect",
			OpenIDConnectURL: strings.TrimSuffix(sec.OIDCIssuer, "/") + "/.well-known/openid-configuration",
			Description:      "A JWT of this OpenID Connect issuer as a bearer token: Authorization: Bearer <jwt>"}
		c.Security = append(c.Security, map[string][]string{SchemeOIDC: {}})
	}
	if sec.Anonymous {
		// An empty requirement: callers without a key are served too.
		c.Security = append(c.Security, map[string][]string{})
	}
	for name, sc := range c.SecuritySchemes {
		c.SecuritySchemes[name] = sc.withV1()
	}
	c.SupportsAuthenticatedExtendedCard = sec.ExtendedCard
	c.Capabilities.ExtendedAgentCard = sec.ExtendedCard
}

// v1Card is the 1.0 AgentCard of the merged card: without the 0.3
// members, each security scheme with its 1.0 member alone. No card has
// securityRequirements: a2a-go v2 (2.2.1) reads their scopes as a bare
// list where the ProtoJSON form (and so the JS and Python SDKs) has
// {"list": [...]}, and no one form decodes with all of them; a client
// takes any of the schemes (the 0.3 "security" says the same).
func v1Card(merged []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(merged, &m); err != nil {
		return nil, err
	}
	for _, k := range []string{"protocolVersion", "url", "preferredTransport", "additionalInterfaces",
		"supportsAuthenticatedExtendedCard", "security"} {
		delete(m, k)
	}
	if caps, ok := m["capabilities"].(map[string]any); ok {
		delete(caps, "stateTransitionHistory") // gone in 1.0
	}
	if schemes, ok := m["securitySchemes"].(map[string]any); ok {
		for name, sc := range schemes {
			only := map[string]any{}
			for _, k := range v1SchemeKeys {
				if v, ok := sc.(map[string]any)[k]; ok {
					only[k] = v
				}
			}
			if len(only) != 1 {
				return nil, fmt.Errorf("security scheme %s has no 1.0 form", name)
			}
			schemes[name] = only
		}
	}
	return json.Marshal(m)
}

func skillOf(f *functions.Function) skill {
	s := skill{
		ID:          f.ID,
		Name:        f.Name,
		Description: f.Description,
		Tags:        f.Tags,
		Examples:    f.Examples,
		InputModes:  f.InputModes,
		OutputModes: f.OutputModes,
	}
	if s.Name == "" {
		s.Name = strings.ReplaceAll(f.ID, "::", " ")
	}
	if s.Description == "" {
		s.Description = s.Name
	}
	if len(s.Tags) == 0 {
		for _, t := range strings.Split(f.ID, "::") {
			if t != "" {
				s.Tags = append(s.Tags, t)
			}
		}
	}
	if s.Tags == nil {
		s.Tags = []string{}
	}
	return s
}
