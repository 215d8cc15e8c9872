package cardviews_test

import (
	"slices"
	"testing"
	"time"

	"github.com/a2ad/a2ad/agentcard"
	"github.com/a2ad/a2ad/agentcard/cardviews"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/schemas"
)

func fn(tb testing.TB, id, tier string) *functions.Function {
	tb.Helper()
	in, err := schemas.Compile(id+".json", []byte(`{"type":"object"}`))
	if err != nil {
		tb.Fatal(err)
	}
	b, err := functions.NewBuiltin("echo")
	if err != nil {
		tb.Fatal(err)
	}
	return &functions.Function{ID: id, Metadata: map[string]any{"a2a.expose": true, "a2a.tier": tier},
		Input: in, Timeout: functions.DefaultTimeout, Backend: b}
}

// TestViews: each view shows its tiers' skills (the public one its own
// tiers, or none), is built once until Reset, and keeps its
// Last-Modified across a Reset that changes nothing.
func TestViews(t *testing.T) {
	cat := functions.NewCatalog(fn(t, "a::public", "public"), fn(t, "a::partner", "partner"))
	builds := 0
	v := cardviews.New(cardviews.Config{
		Options: agentcard.Options{Identity: agentcard.Identity{Name: "t", Version: "1"}, BaseURL: "http://127.0.0.1:1",
			Policy: exposure.Policy{}},
		Catalog:     func() *functions.Catalog { builds++; return cat },
		PublicTiers: []string{"public"},
	})
	pub, at, err := v.Get(nil, true)
	if err != nil || !slices.Equal(pub.Skills, []string{"a::public"}) || at.IsZero() || at.Nanosecond() != 0 {
		t.Fatalf("public view = %v, %v, %v; want a::public, at a whole second", pub, at, err)
	}
	partner, err := v.View([]string{"partner"}, false)
	if err != nil || !slices.Equal(partner.Skills, []string{"a::partner"}) {
		t.Fatalf("partner view = %v, %v; want a::partner", partner, err)
	}
	if again, _ := v.View(nil, true); again != pub || builds != 2 {
		t.Errorf("a view asked again was built again: %d builds, want 2", builds)
	}
	time.Sleep(time.Until(at.Add(time.Second)) + 10*time.Millisecond) // the next second
	v.Reset()
	rebuilt, at2, err := v.Get(nil, true)
	if err != nil || rebuilt == pub || builds != 3 || rebuilt.ETag != pub.ETag || !at2.Equal(at) {
		t.Errorf("after Reset: rebuilt %v, %d builds, ETag %q (was %q), modified %v (was %v)", rebuilt != pub, builds, rebuilt.ETag, pub.ETag, at2, at)
	}

	closed := cardviews.New(cardviews.Config{Options: agentcard.Options{BaseURL: "http://127.0.0.1:1"},
		Catalog: func() *functions.Catalog { return cat }, PublicTiers: []string{"public"}, PublicNoSkills: true})
	if c, err := closed.View(nil, true); err != nil || len(c.Skills) != 0 {
		t.Errorf("public view with PublicNoSkills = %v, %v; want no skill", c, err)
	}
}
