// Package callers identifies the callers of a2ad and the limits that apply
// to them.
//
// An operator lists callers in a keys file (YAML): each entry has a caller
// id, the tiers the caller belongs to, an optional rate, optional limits of
// its own, an enabled flag and the caller's keys: in version 2 of the
// format a list of keys, each with an id, the SHA-256 hash of its secret,
// when it was created and when revoked (so a caller can hold a new key
// and an old one while it rotates); in version 1 one "hash". The file
// never holds a secret: AppendKey generates one, stores only its hash and
// returns the secret to be shown once; RevokeKeys marks keys revoked.
// Usage keeps each key's last use in memory. A TokenVerifier (package
// callers/oidc) identifies callers by OpenID Connect tokens instead. LoadKeys checks the whole file and reports every problem at
// once, each with its line and column. A loaded Keys is immutable; a
// Registry swaps in a new one on Reload and keeps the old one if the file is
// broken.
//
// A Gate admits requests by a token bucket per caller and caps on requests
// in flight, and keeps each caller's budget of request bytes, which may go
// into debt; callers known only by their address (anonymous ones) have
// their buckets and budgets in bounded maps. A Throttle limits failed authentications
// per address, and counts the refusals so that they can be audited in
// summary.
//
// Secrets and hashes never appear in errors; messages may name a caller id
// and a line.
package callers
