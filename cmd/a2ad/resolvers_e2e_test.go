package main

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	a2av03 "github.com/a2aproject/a2a-go/a2a"
	a2aclientv03 "github.com/a2aproject/a2a-go/a2aclient"
	agentcardv03 "github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/a2ad/a2ad/internal/oidctest"
)

// TestDefaultResolversOnAKeyedServer runs the binary with keys only (no
// anonymous callers), then with keys and an OpenID Connect issuer: the
// default card resolvers of a2a-go v2 (DefaultCardParser, no A2A-Version
// header) and of a2a-go v0.3.15 both read the well-known card, each
// seeing every security scheme; a v2 client with a key gets its extended
// card (its partner skills) over each 1.0 binding, and a v0.3.15 client
// with a key over 0.3 JSON-RPC.
func TestDefaultResolversOnAKeyedServer(t *testing.T) {
	is := oidctest.NewIssuer(t)
	for name, extra := range map[string][]string{
		"keys":      nil,
		"keys+oidc": {"--oidc-issuer", is.URL, "--oidc-audience", "a2ad-resolvers"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			keys := filepath.Join(dir, "keys.yaml")
			s := &v2Server{acme: mustAppendKey(t, keys, "acme", "partner")}
			args := append([]string{"--keys", keys, "--grpc-listen", "127.0.0.1:0", "--expose-all"}, extra...)
			s.p = startBinary(t, exampleCatalog, filepath.Join(dir, "a2ad.db"), args...)
			wantSchemes := []string{"apiKey", "bearer"}
			if extra != nil {
				wantSchemes = append(wantSchemes, "oidc")
			}
			ctx := context.Background()
			card, err := agentcard.DefaultResolver.Resolve(ctx, s.p.base)
			if err != nil {
				t.Fatalf("a2a-go v2's default resolver: %v", err)
			}
			var names []string
			for n := range card.SecuritySchemes {
				names = append(names, string(n))
			}
			slices.Sort(names)
			if !slices.Equal(names, wantSchemes) || !card.Capabilities.ExtendedAgentCard || len(card.Skills) != 0 {
				t.Fatalf("a2a-go v2's card: schemes %v, capabilities %+v, skills %d", names, card.Capabilities, len(card.Skills))
			}
			s.card = card
			for _, b := range []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON, a2a.TransportProtocolGRPC} {
				ext, err := s.client(t, b, s.acme).GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
				if err != nil || len(ext.Skills) == 0 || len(ext.SecuritySchemes) != len(wantSchemes) {
					t.Errorf("%s: a2a-go v2's GetExtendedAgentCard with a key: %+v, %v", b, ext, err)
				}
			}

			old, err := agentcardv03.DefaultResolver.Resolve(ctx, s.p.base)
			if err != nil {
				t.Fatalf("a2a-go v0.3.15's default resolver: %v", err)
			}
			if _, ok := old.SecuritySchemes["apiKey"].(a2av03.APIKeySecurityScheme); !ok || len(old.SecuritySchemes) != len(wantSchemes) || !old.SupportsAuthenticatedExtendedCard {
				t.Fatalf("a2a-go v0.3.15's card: %+v", old.SecuritySchemes)
			}
			hc := &http.Client{Transport: keyTransport{s.acme}, Timeout: 30 * time.Second}
			c, err := a2aclientv03.NewFromCard(ctx, old, a2aclientv03.WithJSONRPCTransport(hc))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Destroy()
			ext, err := c.GetAgentCard(ctx)
			if err != nil || len(ext.Skills) == 0 {
				t.Errorf("a2a-go v0.3.15's extended card with a key: %+v, %v", ext, err)
			}
		})
	}
}
