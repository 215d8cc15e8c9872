package agentcard

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Versions are the A2A versions a card speaks. The zero value speaks
// both, as the default card does.
type Versions struct {
	Only03, Only10 bool
}

// ParseVersions reads a comma-separated list of versions: "0.3,1.0" (the
// merged card, and the pure 1.0 card to a request that asks for 1.0),
// "1.0" (the pure 1.0 card alone) or "0.3" (the 0.3 card alone).
func ParseVersions(s string) (Versions, error) {
	var has03, has10 bool
	for _, v := range strings.Split(s, ",") {
		switch strings.TrimSpace(v) {
		case "0.3":
			has03 = true
		case "1.0":
			has10 = true
		default:
			return Versions{}, fmt.Errorf("unknown version %q: the card speaks 0.3, 1.0 or both (0.3,1.0)", strings.TrimSpace(v))
		}
	}
	return Versions{Only03: has03 && !has10, Only10: has10 && !has03}, nil
}

// String is the list ParseVersions reads.
func (v Versions) String() string {
	switch {
	case v.Only03:
		return "0.3"
	case v.Only10:
		return "1.0"
	}
	return "0.3,1.0"
}

// served is the card's default form for versions v, of the merged card
// merged and its 1.0 form v1; byVersion says that v1 is served on request
// beside it.
func (v Versions) served(merged, v1 []byte) (body []byte, byVersion bool, err error) {
	switch {
	case v.Only10:
		return v1, false, nil
	case v.Only03:
		body, err = v03Card(merged)
		return body, false, err
	}
	return merged, true, nil
}

// v03Card is merged without what only 1.0 reads.
func v03Card(merged []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(merged, &m); err != nil {
		return nil, err
	}
	delete(m, "supportedInterfaces")
	if caps, ok := m["capabilities"].(map[string]any); ok {
		delete(caps, "extendedAgentCard")
	}
	if schemes, ok := m["securitySchemes"].(map[string]any); ok {
		for _, sc := range schemes {
			if sc, ok := sc.(map[string]any); ok {
				for _, k := range v1SchemeKeys {
					delete(sc, k)
				}
			}
		}
	}
	return json.Marshal(m)
}

// v1SchemeKeys are the members of a 1.0 SecurityScheme (one of them).
var v1SchemeKeys = []string{"apiKeySecurityScheme", "httpAuthSecurityScheme", "openIdConnectSecurityScheme",
	"oauth2SecurityScheme", "mtlsSecurityScheme"}
