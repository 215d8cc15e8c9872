//go:build !race

package callers_test

const raceEnabled = false
