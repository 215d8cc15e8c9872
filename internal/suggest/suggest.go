// Package suggest finds the likely meant word for a typo: a key of a
// catalogue, a flag of the command line.
package suggest

import "strings"

// Closest returns the option closest to word, if it is close enough to be
// a likely typo (fewer than three edits, and fewer than the option's
// length); else "".
func Closest(word string, options []string) string {
	best, bestD := "", 3
	for _, a := range options {
		if d := editDistance(strings.ToLower(word), a); d < bestD && d < len(a) {
			best, bestD = a, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
