//go:build race

package callers_test

// raceEnabled scales long tests down under the race detector, which makes
// them several times slower.
const raceEnabled = true
