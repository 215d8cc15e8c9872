package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/a2ad/a2ad/admin"
)

// adminCommand is a group of subcommands that work through a running
// a2ad's admin listener: a2ad push and a2ad tasks. It is the one home of
// what they share: the help and unknown-subcommand answers, --server
// (A2AD_SERVER), flags before or after the positional arguments, and
// the client.
type adminCommand struct {
	name  string   // "push"
	usage string   // the text of --help
	subs  []string // the subcommands
	// flags defines sub's own flags on fs; nil for none.
	flags func(sub string, fs *flag.FlagSet)
}

// adminRun is one parsed command line of an adminCommand, its client open.
type adminRun struct {
	sub string
	fs  *flag.FlagSet
	pos []string // the positional arguments, in order
	c   *admin.Client
}

// start parses args (the subcommand first) and opens the client. It
// returns the run, or nil and the exit code when the command ends here:
// help, or bad usage. The caller closes run.c.
func (ac adminCommand) start(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) (*adminRun, int) {
	if len(args) == 0 {
		fmt.Fprint(stderr, ac.usage)
		return nil, 2
	}
	sub := args[0]
	switch {
	case sub == "help" || sub == "-h" || sub == "--help":
		fmt.Fprint(stdout, ac.usage)
		return nil, 0
	case !slices.Contains(ac.subs, sub):
		return nil, unknownCommand(stderr, "a2ad", ac.name+" command", sub, ac.subs, ac.usage)
	}
	run := &adminRun{sub: sub, fs: flag.NewFlagSet("a2ad "+ac.name+" "+sub, flag.ContinueOnError)}
	server := adminServer(lookupEnv)
	run.fs.StringVar(&server, "server", server, "base URL of the admin listener (env A2AD_SERVER)")
	if ac.flags != nil {
		ac.flags(sub, run.fs)
	}
	for rest := args[1:]; ; rest = run.fs.Args()[1:] {
		if err := parseFlags(run.fs, rest, stderr); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0
			}
			fmt.Fprintln(stderr, err)
			return nil, 2
		}
		if run.fs.NArg() == 0 {
			break
		}
		run.pos = append(run.pos, run.fs.Arg(0))
	}
	c, err := admin.NewClient(server)
	if err != nil {
		return nil, usageError(stderr, fmt.Sprintf("%s %s: --server: want the admin listener's base URL, e.g. %s, not %q", ac.name, sub, admin.DefaultURL, server))
	}
	run.c = c
	return run, -1
}

// flagBool is the value of the bool flag name on fs.
func flagBool(fs *flag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Value.String() == "true"
}

// adminServer is the default of the admin commands' --server: the
// environment's A2AD_SERVER, by the rule every flag's variable follows,
// else A2AD_ADMIN_URL (its name before; still read); else the admin
// listener a2ad serve would open by the same settings, its admin-listen
// from the environment (A2AD_ADMIN_LISTEN) or the config file
// (A2AD_CONFIG), so that one shared file names it for every command;
// else admin.DefaultURL.
func adminServer(lookupEnv func(string) (string, bool)) string {
	for _, name := range []string{"A2AD_SERVER", "A2AD_ADMIN_URL"} {
		if v, ok := lookupEnv(name); ok && v != "" {
			return v
		}
	}
	if addr := configuredAdminListen(lookupEnv); addr != "" {
		return "http://" + addr
	}
	return admin.DefaultURL
}

// configuredAdminListen is the admin-listen that the environment or the
// config file of A2AD_CONFIG sets, "" where neither does (or the file
// cannot be read: the command then tries the default, and says where it
// could not connect).
func configuredAdminListen(lookupEnv func(string) (string, bool)) string {
	if v, ok := lookupEnv(envName("admin-listen")); ok {
		return v
	}
	path, ok := lookupEnv(envName("config"))
	if !ok || path == "" {
		return ""
	}
	cfg := DefaultConfig()
	cfg.AdminListen = ""
	fs := flag.NewFlagSet("a2ad", flag.ContinueOnError)
	cfg.flags(fs)
	if applyFile(fs, path) != nil {
		return ""
	}
	return cfg.AdminListen
}
