// Package keyscmd is a2ad keys: create, revoke and list the API keys of
// a keys file (callers.AppendKey, RevokeKeys, LoadKeys), and with
// --server the keys' last use as a running a2ad's admin listener saw it.
package keyscmd
