//go:build race

package main

// raceEnabled: the race detector slows the server several times over and
// unevenly, so latency bounds are not checked under it.
const raceEnabled = true
