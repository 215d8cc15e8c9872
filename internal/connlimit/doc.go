// Package connlimit caps the connections a listener holds open: in all,
// and per client address. Each accepted connection takes a slot until it
// is closed, so a caller that opens connections and never finishes its
// requests runs out of slots of its own before the process runs out of
// file descriptors.
//
// Past the per-address cap a new connection is closed at once. Past the
// overall cap the listener stops accepting until a connection closes: new
// connections wait in the kernel's backlog. Accept errors that pass (too
// many open files, no buffer space) pause accepting with a capped backoff
// rather than spin or end the server's accept loop. Each of these is
// logged at most once every LogEvery.
package connlimit
