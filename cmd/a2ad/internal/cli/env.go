package cli

import (
	"context"
	"io"
)

// Env is what a command reads and writes besides its arguments.
type Env struct {
	Stdout, Stderr io.Writer
	// Lookup reads the environment (os.LookupEnv, or a test's map).
	Lookup func(string) (string, bool)
	// AdminServer is the default base URL of a running a2ad's admin
	// listener, for the commands that talk to one: the environment's, or
	// where a2ad serve would open it by the same settings.
	AdminServer func() string
}

// Command is one of a2ad's commands that takes its own flags rather than
// the settings (a2ad keys, store, tasks, reload, push).
type Command struct {
	Name string
	// Run runs the command on its arguments (those after its name) and
	// returns the exit code.
	Run func(ctx context.Context, args []string, env Env) int
}

// Find is the command of commands named name; nil if there is none.
func Find(commands []Command, name string) *Command {
	for i := range commands {
		if commands[i].Name == name {
			return &commands[i]
		}
	}
	return nil
}
