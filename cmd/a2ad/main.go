// Command a2ad publishes a curated, tier-filtered subset of an operator's
// functions as A2A skills and runs every call as a durable task.
//
//	a2ad serve     run the server
//	a2ad skills    show which functions a tier sees, and why the others are hidden
//	a2ad validate  check a catalogue and its schemas
//	a2ad call      run one function locally, as the server would
//	a2ad keys      create, revoke and list API keys
//	a2ad store     back up, compact or check the store file
//	a2ad tasks     list, show or cancel the tasks of a running server
//	a2ad reload    make a running server reload its catalogue and keys
//	a2ad push      list, retry or drop the push dead letters of a running server
//	a2ad version   print the version
package main

// The reference pages of docs/reference are generated from the code (see
// TestReferenceIsCurrent, which fails when a committed page differs).
//go:generate go test -run TestReferenceIsCurrent -update .

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/cmd/a2ad/internal/admincmd"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/catalogcmd"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/config"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/keyscmd"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/storecmd"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// A second signal exits at once.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv)
	os.Exit(code)
}

const usage = `a2ad publishes operator functions as A2A skills, each call a durable task.

Usage:
  a2ad serve    [flags]   run the server
  a2ad skills   [flags]   show the functions a tier sees, and why the others are hidden
  a2ad validate [flags]   check a catalogue and its schemas (--catalog, or the file as argument)
  a2ad call [flags] FUNCTION [INPUT|-]
                          run one function locally as the server would: no server, no store
  a2ad keys create|revoke|list
                          manage the API keys file (see "a2ad keys help")
  a2ad store backup|compact|check|repair|migrate [flags]
                          back up (also while the server runs), compact, check or repair the store file, or
                          copy it into PostgreSQL (flags only; see "a2ad store help")
  a2ad tasks list|get|cancel [flags]
                          inspect or cancel the tasks of a running a2ad (see "a2ad tasks help")
  a2ad reload [--server URL]
                          make a running a2ad reload its catalogue and keys file (as SIGHUP)
  a2ad push list|retry|drop [flags]
                          list, retry or drop the push dead letters of a running a2ad (see "a2ad push help")
  a2ad version            print the version

Run "a2ad <command> -h" for the flags. Every flag can also be set as an
environment variable (A2AD_ and the flag name in upper snake case, e.g.
A2AD_TIER) or as a key of the --config YAML file; flags win.
`

// commands are a2ad's commands, for a guess at a typo.
var commands = []string{"serve", "skills", "validate", "call", "keys", "store", "tasks", "reload", "push", "version", "help"}

// tools are the commands that take flags of their own, not the settings.
var tools = []cli.Command{
	{Name: "keys", Run: keyscmd.Run},
	{Name: "store", Run: storecmd.Run},
	{Name: "tasks", Run: admincmd.Tasks},
	{Name: "reload", Run: admincmd.Reload},
	{Name: "push", Run: admincmd.Push},
}

// Config is a2ad's settings (see package config).
type Config = config.Config

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "a2ad", Version())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "serve", "skills", "validate", "call":
	default:
		if t := cli.Find(tools, cmd); t != nil {
			return t.Run(ctx, rest, cli.Env{Stdout: stdout, Stderr: stderr, Lookup: lookupEnv,
				AdminServer: func() string { return config.AdminServer(lookupEnv) }})
		}
		return cli.UnknownCommand(stderr, "a2ad", "command", cmd, commands, usage)
	}
	cfg, extra, err := config.Parse(cmd, rest, lookupEnv, stderr)
	var fe *cli.FlagError
	switch {
	case errors.Is(err, flag.ErrHelp):
		if cmd == "call" { // after the flags: what the arguments are
			fmt.Fprint(stderr, "\n"+catalogcmd.CallUsage)
		}
		return 0
	case errors.As(err, &fe):
		fmt.Fprintln(stderr, fe) // it names the command
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "a2ad:", err)
		return 2
	}
	switch cmd {
	case "serve":
		return serve(ctx, cfg, stderr)
	case "skills":
		return catalogcmd.Skills(catalogSettings(&cfg, stderr), stdout, stderr)
	case "call":
		return catalogcmd.Call(ctx, catalogSettings(&cfg, stderr), extra, stdin, stdout, stderr)
	default:
		return catalogcmd.Validate(catalogSettings(&cfg, stderr), extra, stdout, stderr)
	}
}

// catalogSettings are the settings the catalogue commands read; their
// logger writes to stderr.
func catalogSettings(c *Config, stderr io.Writer) catalogcmd.Settings {
	return catalogcmd.Settings{Catalog: c.Catalog, Keys: c.Keys, Tier: c.Tier, ExposeAll: c.ExposeAll, Policy: c.Policy(),
		Format: c.Format, Protocol: c.Protocol, Caller: c.Caller,
		Logger: func() (zerolog.Logger, error) { return newLogger(*c, stderr) }}
}

// Version is the build's version (a2ad version, the card's version, the
// overview and a2ad_build_info): the -ldflags value, else what the build
// recorded in the binary (see buildVersion).
func Version() string {
	if version != "dev" {
		return version
	}
	bi, _ := debug.ReadBuildInfo()
	return buildVersion(bi)
}

// buildVersion is the version bi records: the module's version (a tag,
// as go install a2ad@v1.2.3 builds, or the pseudo-version go build makes
// from the git checkout, v0.0.0-<time>-<revision>, +dirty for changes not
// committed); else, from the VCS stamp alone, dev-<time>-<revision>
// (-dirty); else "dev": a build outside a checkout, or with
// -buildvcs=false.
func buildVersion(bi *debug.BuildInfo) string {
	if bi == nil {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(12, len(s.Value))]
		case "vcs.time":
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				at = t.UTC().Format("20060102150405") + "-"
			}
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "dev"
	}
	return "dev-" + at + rev + dirty
}
