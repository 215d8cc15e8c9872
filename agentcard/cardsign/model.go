package cardsign

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/a2ad/a2ad/internal/jcs"
)

// The 1.0 AgentCard as the SDKs' generated models hold it
// (lf.a2a.v1.AgentCard, proto3 JSON): what a model reads from a card and
// writes back. A field the model does not know is dropped; a proto3
// scalar at its default ("", false) is not written, except the optional
// ones (the capabilities' booleans), which are pointers here. Signatures
// are left out: the canonical form never holds them.
type (
	modelCard struct {
		Name                 string                 `json:"name,omitempty"`
		Description          string                 `json:"description,omitempty"`
		SupportedInterfaces  []modelInterface       `json:"supportedInterfaces,omitempty"`
		Provider             *modelProvider         `json:"provider,omitempty"`
		Version              string                 `json:"version,omitempty"`
		DocumentationURL     *string                `json:"documentationUrl,omitempty"`
		Capabilities         *modelCapabilities     `json:"capabilities,omitempty"`
		SecuritySchemes      map[string]modelScheme `json:"securitySchemes,omitempty"`
		SecurityRequirements []modelRequirement     `json:"securityRequirements,omitempty"`
		DefaultInputModes    []string               `json:"defaultInputModes,omitempty"`
		DefaultOutputModes   []string               `json:"defaultOutputModes,omitempty"`
		Skills               []modelSkill           `json:"skills,omitempty"`
		IconURL              *string                `json:"iconUrl,omitempty"`
	}
	modelInterface struct {
		URL             string `json:"url,omitempty"`
		ProtocolBinding string `json:"protocolBinding,omitempty"`
		Tenant          string `json:"tenant,omitempty"`
		ProtocolVersion string `json:"protocolVersion,omitempty"`
	}
	modelProvider struct {
		URL          string `json:"url,omitempty"`
		Organization string `json:"organization,omitempty"`
	}
	modelCapabilities struct {
		Streaming         *bool            `json:"streaming,omitempty"`
		PushNotifications *bool            `json:"pushNotifications,omitempty"`
		Extensions        []modelExtension `json:"extensions,omitempty"`
		ExtendedAgentCard *bool            `json:"extendedAgentCard,omitempty"`
	}
	modelExtension struct {
		URI         string          `json:"uri,omitempty"`
		Description string          `json:"description,omitempty"`
		Required    bool            `json:"required,omitempty"`
		Params      json.RawMessage `json:"params,omitempty"` // a google.protobuf.Struct: kept as is
	}
	modelSkill struct {
		ID                   string             `json:"id,omitempty"`
		Name                 string             `json:"name,omitempty"`
		Description          string             `json:"description,omitempty"`
		Tags                 []string           `json:"tags,omitempty"`
		Examples             []string           `json:"examples,omitempty"`
		InputModes           []string           `json:"inputModes,omitempty"`
		OutputModes          []string           `json:"outputModes,omitempty"`
		SecurityRequirements []modelRequirement `json:"securityRequirements,omitempty"`
	}
	modelRequirement struct {
		Schemes map[string]struct {
			List []string `json:"list,omitempty"`
		} `json:"schemes,omitempty"`
	}
	// modelScheme is the oneof of the schemes a2ad declares; a 0.3-form
	// scheme ({"type": ...}) matches none and reads as an empty one.
	modelScheme struct {
		APIKey *struct {
			Description string `json:"description,omitempty"`
			Location    string `json:"location,omitempty"`
			Name        string `json:"name,omitempty"`
		} `json:"apiKeySecurityScheme,omitempty"`
		HTTPAuth *struct {
			Description  string `json:"description,omitempty"`
			Scheme       string `json:"scheme,omitempty"`
			BearerFormat string `json:"bearerFormat,omitempty"`
		} `json:"httpAuthSecurityScheme,omitempty"`
		OpenIDConnect *struct {
			Description      string `json:"description,omitempty"`
			OpenIDConnectURL string `json:"openIdConnectUrl,omitempty"`
		} `json:"openIdConnectSecurityScheme,omitempty"`
		MTLS *struct {
			Description string `json:"description,omitempty"`
		} `json:"mtlsSecurityScheme,omitempty"`
	}
)

// ModelPayload is the canonical form of the card doc as the JS SDK 1.3
// computes it (canonicalizeAgentCard; the Python SDK's MessageToDict
// path is the same idea): the card read into the 1.0 AgentCard model and
// written back, every empty string, list and object then dropped, at any
// depth, and the rest in RFC 8785 form. The 0.3 fields of a2ad's merged
// card, and its securitySchemes, are not in it.
func ModelPayload(doc []byte) ([]byte, error) {
	var c modelCard
	if err := json.Unmarshal(doc, &c); err != nil {
		return nil, fmt.Errorf("card signing: read as a 1.0 AgentCard: %w", err)
	}
	// The SDK verifies the card it parsed (its resolver's, its client's
	// GetExtendedAgentCard), and canonicalizeAgentCard reads that parsed
	// model again as if it were JSON: the schemes' oneofs ({"scheme":
	// {"$case": ...}}) match no member and vanish. So securitySchemes are
	// never in its canonical form (the served form's signature covers them).
	c.SecuritySchemes = nil
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("card signing: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("card signing: %w", err)
	}
	v = dropEmpty(v)
	if v == nil {
		return []byte("{}"), nil
	}
	return jcs.Append(nil, v)
}

// dropEmpty drops "", null, and lists and objects that are empty once
// their own empty members are dropped; nil for a value dropped whole.
func dropEmpty(v any) any {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		if v == "" {
			return nil
		}
	case []any:
		out := make([]any, 0, len(v))
		for _, e := range v {
			if e = dropEmpty(e); e != nil {
				out = append(out, e)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case map[string]any:
		for k, e := range v {
			if e = dropEmpty(e); e == nil {
				delete(v, k)
			} else {
				v[k] = e
			}
		}
		if len(v) == 0 {
			return nil
		}
	}
	return v
}
