package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/a2ad/a2ad/internal/suggest"
)

// flagError is a command line the flags of a command do not take: the
// problem, with a likely meant flag for a typo, and where the flags are
// listed.
type flagError struct {
	command string // "a2ad serve"
	problem string
}

func (e *flagError) Error() string {
	return fmt.Sprintf("%s: %s\nRun \"%s --help\" for the flags.", e.command, e.problem, e.command)
}

// flagDashes gives the flag names in the flag package's errors two
// dashes.
var flagDashes = strings.NewReplacer("flag -", "flag --", "for -", "for --", ": -", ": --")

// parseFlags parses args with fs. It prints the flags to help only when
// asked (-h, --help: then it returns flag.ErrHelp); any other problem is
// a *flagError, first and short, rather than the flag package's error
// after every flag.
func parseFlags(fs *flag.FlagSet, args []string, help io.Writer) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if err == nil {
		return nil
	}
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(help, "Usage of %s:\n", fs.Name())
		if countFlags(fs) > 20 {
			printGroupedDefaults(help, fs) // serve's many flags, by what they concern
			return err
		}
		fs.SetOutput(help)
		fs.PrintDefaults()
		return err
	}
	// The flag package names a flag with one dash; a2ad's help and
	// README write two.
	problem := flagDashes.Replace(err.Error())
	// The flag package's words for a flag it does not know.
	if name, ok := strings.CutPrefix(problem, "flag provided but not defined: --"); ok {
		problem = "unknown flag --" + name
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if s := suggest.Closest(name, names); s != "" {
			problem += " (did you mean --" + s + "?)"
		}
	}
	return &flagError{command: fs.Name(), problem: problem}
}

// fileList is a flag that may be given more than once (or as a
// comma-separated list, which is how the config file's lists and the
// environment set it); each source replaces what an earlier one set (see
// resetter), so that the command line overrides the environment.
type fileList struct{ list *[]string }

func (f fileList) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f fileList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*f.list = append(*f.list, s)
		}
	}
	return nil
}

func (f fileList) reset() { *f.list = nil }

// resetter is a flag value that Set appends to: ParseConfig resets it
// before a later source sets it.
type resetter interface{ reset() }

// unknownCommand tells that what is not a command of where ("command",
// "store tool", "keys command"...), with a guess among known for a typo,
// then usage; it returns the exit code of bad usage.
func unknownCommand(stderr io.Writer, prefix, what, name string, known []string, usage string) int {
	guess := ""
	if g := suggest.Closest(name, known); g != "" {
		guess = fmt.Sprintf(" (did you mean %q?)", g)
	}
	fmt.Fprintf(stderr, "%s: unknown %s %q%s\n\n%s", prefix, what, name, guess, usage)
	return 2
}

// countFlags is how many flags fs defines.
func countFlags(fs *flag.FlagSet) int {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n
}
