package main

import (
	"flag"
	"io"

	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
)

// parseFlags parses args with fs, the flags of a command that reads the
// settings (see cli.ParseFlags); serve's many flags print by group.
func parseFlags(fs *flag.FlagSet, args []string, help io.Writer) error {
	return cli.ParseFlags(fs, args, help, func(w io.Writer, fs *flag.FlagSet) {
		if countFlags(fs) > 20 {
			printGroupedDefaults(w, fs) // serve's many flags, by what they concern
			return
		}
		fs.SetOutput(w)
		fs.PrintDefaults()
	})
}

// countFlags is how many flags fs defines.
func countFlags(fs *flag.FlagSet) int {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n
}
