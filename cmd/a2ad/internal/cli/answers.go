package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/functions"
	"github.com/a2ad/a2ad/internal/suggest"
)

// UnknownCommand tells that name is not a command of where ("command",
// "store tool", "keys command"...), with a guess among known for a typo,
// then usage; it returns the exit code of bad usage.
func UnknownCommand(stderr io.Writer, prefix, what, name string, known []string, usage string) int {
	guess := ""
	if g := suggest.Closest(name, known); g != "" {
		guess = fmt.Sprintf(" (did you mean %q?)", g)
	}
	fmt.Fprintf(stderr, "%s: unknown %s %q%s\n\n%s", prefix, what, name, guess, usage)
	return 2
}

// UsageError prints msg as a2ad's and returns the exit code of bad usage.
func UsageError(stderr io.Writer, msg string) int {
	fmt.Fprintln(stderr, "a2ad:", msg)
	return 2
}

// PrintLoadError prints why a catalogue or a keys file did not load: each
// problem on a line of its own, "path:line:col: ...", then their count.
func PrintLoadError(w io.Writer, err error) {
	var le *functions.LoadError
	if errors.As(err, &le) {
		fmt.Fprintln(w, le.Error()) // one "path:line:col: ..." line per problem
		fmt.Fprintf(w, "a2ad: %d problem(s) in %s\n", len(le.Problems), le.Path)
		return
	}
	var ke *callers.LoadError
	if errors.As(err, &ke) {
		fmt.Fprintln(w, ke.Error())
		fmt.Fprintf(w, "a2ad: %d problem(s) in keys file %s\n", len(ke.Problems), ke.Path)
		return
	}
	fmt.Fprintln(w, "a2ad:", err)
}

// Count is n and the noun, plural unless n is 1.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
