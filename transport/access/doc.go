// Package access joins the callers domain (API keys, tokens, client
// certificates, per-caller limits, rate gates, the failed-auth throttle)
// to the transport core: its types are the core's Authenticator,
// Admitter, ByteMeter and AuthThrottle, shared by every binding.
//
// A new per-caller limit goes in three places: a field of
// callers.Limits (the keys file) and callers.Effective (its resolution
// over the server's defaults), and where Principal carries it to what
// enforces it (tasks.Caller for the task service, the Principal's own
// fields for the core's gates).
package access
