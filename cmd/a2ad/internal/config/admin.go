package config

import (
	"flag"

	"github.com/a2ad/a2ad/admin"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
)

// AdminServer is the default of the admin commands' --server: the
// environment's A2AD_SERVER, by the rule every flag's variable follows,
// else A2AD_ADMIN_URL (its name before; still read); else the admin
// listener a2ad serve would open by the same settings, its admin-listen
// from the environment (A2AD_ADMIN_LISTEN) or the config file
// (A2AD_CONFIG), so that one shared file names it for every command;
// else admin.DefaultURL.
func AdminServer(lookupEnv func(string) (string, bool)) string {
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
	if v, ok := lookupEnv(cli.EnvName("admin-listen")); ok {
		return v
	}
	path, ok := lookupEnv(cli.EnvName("config"))
	if !ok || path == "" {
		return ""
	}
	cfg := Default()
	cfg.AdminListen = ""
	fs := flag.NewFlagSet("a2ad", flag.ContinueOnError)
	cfg.Flags(fs)
	if cli.ApplyFile(fs, path) != nil {
		return ""
	}
	return cfg.AdminListen
}
