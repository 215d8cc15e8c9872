package suggest_test

import (
	"testing"

	"github.com/a2ad/a2ad/internal/suggest"
)

func TestClosest(t *testing.T) {
	options := []string{"listen", "admin-listen", "log-level", "tier"}
	for _, tc := range []struct{ word, want string }{
		{"lisen", "listen"},
		{"LISTEN", "listen"},
		{"admin-lsten", "admin-listen"},
		{"log-levl", "log-level"},
		{"tiers", "tier"},
		{"xy", ""},         // too far from anything
		{"bogus-flag", ""}, // too far from anything
	} {
		if got := suggest.Closest(tc.word, options); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}
