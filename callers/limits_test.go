package callers_test

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/callers"
)

func ptr[T any](v T) *T { return &v }

// TestKeyLimits: quota_tasks, quota_bytes, max_history, max_calls and
// rate_bytes are a key's own limits; each is optional (nil: the server's
// default), 0 is unlimited, and Identify hands them on.
func TestKeyLimits(t *testing.T) {
	path := writeKeysFile(t, `keys:
  - id: billing
    hash: `+hashBilling+`
    tiers: [internal]
    quota_tasks: 500
    quota_bytes: 1073741824
    max_history: 0
    max_calls: 8
    rate_bytes: 65536
  - id: partner
    hash: `+hashPartner+`
    tiers: [public]
    quota_bytes: 0
    max_calls: 0
`)
	ks := mustLoadKeys(t, path)
	billing, _ := ks.Authenticate(secretBilling)
	want := callers.Limits{QuotaTasks: ptr(int64(500)), QuotaBytes: ptr(int64(1 << 30)), MaxHistory: ptr(0),
		MaxCalls: ptr(8), RateBytes: ptr(int64(65536))}
	if diff := cmp.Diff(want, billing.Limits); diff != "" {
		t.Errorf("billing's limits (-want +got):\n%s", diff)
	}
	partner, _ := ks.Authenticate(secretPartner)
	if diff := cmp.Diff(callers.Limits{QuotaBytes: ptr(int64(0)), MaxCalls: ptr(0)}, partner.Limits); diff != "" {
		t.Errorf("partner's limits (-want +got):\n%s", diff)
	}

	// Authenticate returns copies: changing one changes no other.
	*billing.Limits.QuotaTasks = 1
	*billing.Limits.MaxCalls = 1
	*billing.Limits.RateBytes = 1
	if again, _ := ks.Authenticate(secretBilling); *again.Limits.QuotaTasks != 500 || *again.Limits.MaxCalls != 8 || *again.Limits.RateBytes != 65536 {
		t.Errorf("a changed copy changed the key: quota_tasks %d, max_calls %d, rate_bytes %d",
			*again.Limits.QuotaTasks, *again.Limits.MaxCalls, *again.Limits.RateBytes)
	}

	reg, err := callers.NewRegistry(path)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/a2a", nil)
	r.Header.Set("Authorization", "Bearer "+secretBilling)
	id, err := (&callers.Authenticator{Registry: reg}).Identify(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, id.Limits); diff != "" {
		t.Errorf("identity's limits (-want +got):\n%s", diff)
	}
}

func TestKeyLimitProblems(t *testing.T) {
	path := writeKeysFile(t, `keys:
  - id: a
    hash: `+hashBilling+`
    tiers: [t]
    quota_tasks: -1
    quota_bytes: 1.5
    max_history: 3000000000
  - id: b
    hash: `+hashPartner+`
    tiers: [t]
    quota_bytes: "1GiB"
    max_history: [1]
    max_calls: -3
    rate_bytes: 1MiB
`)
	_, err := callers.LoadKeys(path)
	var le *callers.LoadError
	if !errors.As(err, &le) {
		t.Fatalf("LoadKeys = %v, want a *LoadError", err)
	}
	var got []string
	for _, p := range le.Problems {
		got = append(got, p.String())
	}
	want := []string{
		`5:18: /keys/0/quota_tasks (caller "a"): quota_tasks must be an integer from 0 (no limit) to 9223372036854775807, got -1`,
		`6:18: /keys/0/quota_bytes (caller "a"): quota_bytes must be an integer (0 for no limit), got a number`,
		`7:18: /keys/0/max_history (caller "a"): max_history must be an integer from 0 (no limit) to 2147483647, got 3000000000`,
		`11:18: /keys/1/quota_bytes (caller "b"): quota_bytes must be an integer (0 for no limit), got a string`,
		`12:18: /keys/1/max_history (caller "b"): max_history must be an integer (0 for no limit), got a list`,
		`13:16: /keys/1/max_calls (caller "b"): max_calls must be an integer from 0 (no limit) to 2147483647, got -3`,
		`14:17: /keys/1/rate_bytes (caller "b"): rate_bytes must be an integer (0 for no limit), got a string`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
