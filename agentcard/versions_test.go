package agentcard_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	a2av2 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2ad/a2ad/agentcard"
	"github.com/a2ad/a2ad/exposure"
)

// TestBuild_SecurityBothGenerations: the merged card of a server with
// keys and OIDC decodes with a2a-go v0.3's AgentCard and with v2's (what
// v2's default resolver does), each seeing every scheme in its own form;
// the pure 1.0 and 0.3 forms hold their generation's members alone.
func TestBuild_SecurityBothGenerations(t *testing.T) {
	opts := agentcard.Options{
		BaseURL: "https://a.example", Policy: exposure.Policy{Tier: "partner"},
		Security: &agentcard.Security{APIKeys: true, OIDCIssuer: "https://id.example", Anonymous: true, ExtendedCard: true},
	}
	card := mustBuild(t, testCatalog(t), opts)
	var old a2a.AgentCard
	if err := json.Unmarshal(card.JSON, &old); err != nil {
		t.Fatalf("a2a-go v0.3: %v", err)
	}
	if _, ok := old.SecuritySchemes["apiKey"].(a2a.APIKeySecurityScheme); !ok || len(old.SecuritySchemes) != 3 || len(old.Security) != 4 {
		t.Errorf("a2a-go v0.3 schemes %#v, security %v", old.SecuritySchemes, old.Security)
	}
	for form, doc := range map[string][]byte{"merged": card.JSON, "1.0": card.V1JSON} {
		var v2 a2av2.AgentCard
		if err := json.Unmarshal(doc, &v2); err != nil {
			t.Fatalf("a2a-go v2, the %s card: %v", form, err)
		}
		k, ok := v2.SecuritySchemes["apiKey"].(a2av2.APIKeySecurityScheme)
		_, bearer := v2.SecuritySchemes["bearer"].(a2av2.HTTPAuthSecurityScheme)
		o, oidc := v2.SecuritySchemes["oidc"].(a2av2.OpenIDConnectSecurityScheme)
		if !ok || k.Name != "X-API-Key" || k.Location != "header" || !bearer || !oidc ||
			o.OpenIDConnectURL != "https://id.example/.well-known/openid-configuration" || len(v2.SecurityRequirements) != 0 ||
			!v2.Capabilities.ExtendedAgentCard || len(v2.Skills) != 2 {
			t.Errorf("a2a-go v2, the %s card: schemes %#v, requirements %v, capabilities %+v", form, v2.SecuritySchemes, v2.SecurityRequirements, v2.Capabilities)
		}
	}
	if bytes.Contains(card.V1JSON, []byte(`"type":"apiKey"`)) || !bytes.Contains(card.JSON, []byte(`"type":"apiKey"`)) {
		t.Errorf("the 1.0 card holds 0.3 scheme members: %s", card.V1JSON)
	}
	opts.Versions, _ = agentcard.ParseVersions("0.3")
	only := mustBuild(t, testCatalog(t), opts)
	if bytes.Contains(only.JSON, []byte("SecurityScheme")) || bytes.Contains(only.JSON, []byte("supportedInterfaces")) || only.ByVersion {
		t.Errorf("the 0.3 card holds 1.0 members: %s", only.JSON)
	}
	var v03 a2a.AgentCard
	if err := json.Unmarshal(only.JSON, &v03); err != nil || len(v03.SecuritySchemes) != 3 {
		t.Errorf("a2a-go v0.3, the 0.3 card: %v %v", err, v03.SecuritySchemes)
	}
}
