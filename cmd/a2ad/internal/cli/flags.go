package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/a2ad/a2ad/internal/suggest"
)

// FlagError is a command line the flags of a command do not take: the
// problem, with a likely meant flag for a typo, and where the flags are
// listed.
type FlagError struct {
	Command string // "a2ad serve"
	Problem string
}

func (e *FlagError) Error() string {
	return fmt.Sprintf("%s: %s\nRun \"%s --help\" for the flags.", e.Command, e.Problem, e.Command)
}

// flagDashes gives the flag names in the flag package's errors two
// dashes.
var flagDashes = strings.NewReplacer("flag -", "flag --", "for -", "for --", ": -", ": --")

// ParseFlags parses args with fs. It prints the flags to help only when
// asked (-h, --help: then it returns flag.ErrHelp), with printDefaults
// (nil for the flag package's PrintDefaults); any other problem is a
// *FlagError, first and short, rather than the flag package's error after
// every flag.
func ParseFlags(fs *flag.FlagSet, args []string, help io.Writer, printDefaults func(io.Writer, *flag.FlagSet)) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if err == nil {
		return nil
	}
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(help, "Usage of %s:\n", fs.Name())
		if printDefaults != nil {
			printDefaults(help, fs)
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
	return &FlagError{Command: fs.Name(), Problem: problem}
}

// Parse parses args with fs for a command of few flags, and returns the
// exit code to end with (0 after --help, 2 for bad flags, the problem
// printed), or -1 to go on.
func Parse(fs *flag.FlagSet, args []string, stderr io.Writer) int {
	if err := ParseFlags(fs, args, stderr, nil); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, err)
		return 2
	}
	return -1
}

// FlagBool is the value of the bool flag name on fs.
func FlagBool(fs *flag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Value.String() == "true"
}

// List is a flag that may be given more than once (or as a
// comma-separated list, which is how the config file's lists and the
// environment set it); each source replaces what an earlier one set (see
// Resetter), so that the command line overrides the environment.
type List struct{ L *[]string }

func (f List) String() string {
	if f.L == nil {
		return ""
	}
	return strings.Join(*f.L, ",")
}

func (f List) Set(v string) error {
	*f.L = append(*f.L, SplitList(v)...)
	return nil
}

// Reset empties the list: a later source sets it anew.
func (f List) Reset() { *f.L = nil }

// Resetter is a flag value that Set appends to: a later source of the
// settings resets it before it sets it.
type Resetter interface{ Reset() }

// SplitList is the items of a comma-separated list, trimmed, the empty
// ones left out.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// EnvName is the environment variable of a flag: A2AD_ and the name in
// upper snake case.
func EnvName(flagName string) string {
	return "A2AD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}
