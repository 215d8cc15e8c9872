// Package oidc identifies a2ad's callers by OpenID Connect tokens: JWTs
// signed by the one issuer the operator configures, whose keys come from
// the JWKS its discovery document names.
//
// A Verifier checks a token's signature (an asymmetric algorithm, a key of
// the issuer's JWKS), its issuer, its audience, and its expiry and
// not-before times with a small clock skew, then maps one claim to the
// caller id and one to the caller's tiers. It uses github.com/coreos/go-oidc
// for discovery and the claims' checks, and a key set of its own (KeySet)
// so that a token naming an unknown key fetches the JWKS at most once per
// interval: a flood of bad tokens cannot hammer the issuer. Fetches after
// the first run in the key set's own goroutine, so that no token waits
// for a slow issuer beyond a short bound (KeyWait). Every fetch
// goes to the issuer's URLs, never a URL a token names, and is bounded in
// time and size. Tokens never appear in errors or logs.
package oidc
