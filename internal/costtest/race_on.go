//go:build race

package costtest

// raceBuild: the race detector makes sync.Pool drop a quarter of what is
// put back, so pooled objects are allocated again at random.
const raceBuild = true
