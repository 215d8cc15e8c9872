package oidc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/callers"
)

// Config configures a Verifier. Issuer and Audience are required; the
// other fields have defaults.
type Config struct {
	// Issuer is the issuer's URL, exactly as its tokens' "iss" and its
	// discovery document's "issuer" say it.
	Issuer string
	// Audience is what a token's "aud" must hold.
	Audience string
	// CallerClaim names the claim that is the caller id ("sub").
	CallerClaim string
	// TiersClaim names the claim that lists the caller's tiers
	// ("a2a_tiers"): a list of strings, or one string of tiers separated
	// by spaces or commas.
	TiersClaim string
	// Skew is the clock skew allowed on "exp" and "nbf" (1 minute).
	Skew time.Duration
	// MinRefresh is the least time between two fetches of the JWKS
	// (1 minute); MaxAge is the age at which the keys are fetched again
	// (1 hour).
	MinRefresh, MaxAge time.Duration
	// KeyWait is how long a token of a key id the cache lacks waits for
	// the fetch it asks for (1 s); a fetch still under way then goes on,
	// and the token is refused.
	KeyWait time.Duration
	// Timeout bounds each fetch (10 s) and MaxBytes what it reads (1 MiB).
	Timeout  time.Duration
	MaxBytes int64
	// Client fetches the discovery document and the JWKS; nil for a
	// client of its own (whose Timeout is Timeout).
	Client *http.Client
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger zerolog.Logger
}

// Defaults of Config.
const (
	DefaultCallerClaim = "sub"
	DefaultTiersClaim  = "a2a_tiers"
	DefaultSkew        = time.Minute
	DefaultMinRefresh  = time.Minute
	DefaultMaxAge      = time.Hour
	DefaultKeyWait     = time.Second
	DefaultTimeout     = 10 * time.Second
	DefaultMaxBytes    = 1 << 20
)

// Verifier verifies the issuer's tokens and maps them to identities. It is
// safe for concurrent use.
type Verifier struct {
	cfg      Config
	keys     *KeySet
	verifier *gooidc.IDTokenVerifier
}

var _ callers.TokenVerifier = (*Verifier)(nil)

// New reads the issuer's discovery document and its JWKS, and returns a
// Verifier of its tokens. It returns an error if cfg lacks the issuer or
// the audience, or if the document or the keys cannot be fetched, or the
// document names another issuer.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("oidc: the issuer and the audience are required")
	}
	setDefaults(&cfg)
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	wellKnown := strings.TrimSuffix(cfg.Issuer, "/") + "/.well-known/openid-configuration"
	body, err := get(ctx, cfg.Client, wellKnown, cfg.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("oidc: discovery: %w", err)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("oidc: discovery document %s: %w", wellKnown, err)
	}
	if doc.Issuer != cfg.Issuer {
		return nil, fmt.Errorf("oidc: the discovery document at %s names the issuer %q, not %q", wellKnown, doc.Issuer, cfg.Issuer)
	}
	if doc.JWKSURI == "" {
		return nil, fmt.Errorf("oidc: the discovery document at %s has no jwks_uri", wellKnown)
	}
	ks := &KeySet{url: doc.JWKSURI, client: cfg.Client, maxBytes: cfg.MaxBytes, minInterval: cfg.MinRefresh,
		maxAge: cfg.MaxAge, keyWait: cfg.KeyWait, now: cfg.Now, log: cfg.Logger}
	if err := ks.Fetch(ctx); err != nil {
		return nil, fmt.Errorf("oidc: %w", err)
	}
	ks.Start()
	algs := make([]string, len(algorithms))
	for i, a := range algorithms {
		algs[i] = string(a)
	}
	v := gooidc.NewVerifier(cfg.Issuer, ks, &gooidc.Config{
		ClientID:             cfg.Audience,
		SupportedSigningAlgs: algs,
		// exp and nbf are checked in Verify, with the skew; go-oidc
		// allows none on exp and 5 minutes on nbf.
		SkipExpiryCheck: true,
	})
	return &Verifier{cfg: cfg, keys: ks, verifier: v}, nil
}

func setDefaults(cfg *Config) {
	if cfg.CallerClaim == "" {
		cfg.CallerClaim = DefaultCallerClaim
	}
	if cfg.TiersClaim == "" {
		cfg.TiersClaim = DefaultTiersClaim
	}
	if cfg.Skew == 0 {
		cfg.Skew = DefaultSkew
	}
	if cfg.MinRefresh == 0 {
		cfg.MinRefresh = DefaultMinRefresh
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.KeyWait == 0 {
		cfg.KeyWait = DefaultKeyWait
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
}

// Close stops the goroutine that fetches the issuer's keys.
func (v *Verifier) Close() error { return v.keys.Close() }

// Verify checks token (signature, issuer, audience, expiry, not-before)
// and returns the identity it asserts: the caller id from CallerClaim, the
// tiers from TiersClaim. The error says which check failed; it never holds
// the token.
func (v *Verifier) Verify(ctx context.Context, token string) (callers.Identity, error) {
	idt, err := v.verifier.Verify(ctx, token)
	if err != nil {
		return callers.Identity{}, err
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return callers.Identity{}, fmt.Errorf("the token's claims: %w", err)
	}
	// go-oidc reads a time claim given as a string of digits as the
	// number, and a2ad read an nbf of any other type as none.
	for _, c := range []string{"exp", "nbf", "iat"} {
		if val, ok := claims[c]; ok {
			if _, isNum := val.(float64); !isNum {
				return callers.Identity{}, fmt.Errorf("the token's %s claim must be a number (seconds since 1970), got %s", c, jsonKind(val))
			}
		}
	}
	now := v.cfg.Now()
	if idt.Expiry.IsZero() {
		return callers.Identity{}, errors.New("the token has no exp")
	}
	if now.After(idt.Expiry.Add(v.cfg.Skew)) {
		return callers.Identity{}, fmt.Errorf("the token expired at %s", idt.Expiry.UTC().Format(time.RFC3339))
	}
	if nbf, ok := claims["nbf"].(float64); ok {
		if t := unixTime(nbf); now.Add(v.cfg.Skew).Before(t) {
			return callers.Identity{}, fmt.Errorf("the token is not valid before %s", t.UTC().Format(time.RFC3339))
		}
	}
	id, ok := claims[v.cfg.CallerClaim].(string)
	if !ok || !validCallerID(id) {
		return callers.Identity{}, fmt.Errorf("the token's %s claim is no caller id (1 to 255 printable ASCII characters, no space)", v.cfg.CallerClaim)
	}
	tiers, err := tiersOf(claims[v.cfg.TiersClaim])
	if err != nil {
		return callers.Identity{}, fmt.Errorf("the token's %s claim: %w", v.cfg.TiersClaim, err)
	}
	return callers.Identity{CallerID: id, Tiers: tiers, Token: true}, nil
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func unixTime(sec float64) time.Time {
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(frac*1e9))
}

// validCallerID: 1 to 255 printable ASCII characters, no space, since
// issuers' subjects take more than keys' caller ids ("auth0|5f1…").
func validCallerID(s string) bool {
	if len(s) == 0 || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// tiersOf reads the tiers claim: a list of strings, or a string of tiers
// separated by spaces or commas. Repeats are dropped; none is an error.
func tiersOf(v any) ([]string, error) {
	var raw []string
	switch v := v.(type) {
	case nil:
		return nil, errors.New("missing")
	case string:
		raw = strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' })
	case []any:
		for _, t := range v {
			s, ok := t.(string)
			if !ok {
				return nil, errors.New("must list strings")
			}
			raw = append(raw, s)
		}
	default:
		return nil, errors.New("must be a list of tiers or a string of them")
	}
	var tiers []string
	for _, t := range raw {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(tiers, t) {
			tiers = append(tiers, t)
		}
	}
	if len(tiers) == 0 {
		return nil, errors.New("lists no tier")
	}
	return tiers, nil
}
