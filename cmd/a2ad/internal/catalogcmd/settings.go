package catalogcmd

import (
	"github.com/rs/zerolog"

	"github.com/a2ad/a2ad/exposure"
)

// Settings are what the catalogue commands read of a2ad's settings
// (package main's Config: flags, environment and config file).
type Settings struct {
	Catalog   string // the catalogue file
	Keys      string // the keys file; "" for none
	Tier      string
	ExposeAll bool
	Policy    exposure.Policy // the exposure policy the settings make

	Format   string // skills: text or json
	Protocol string // skills: a2a or mcp
	Caller   string // skills: the caller of Keys whose view to show; "" for none

	// Logger builds call's logger from the log settings; its error names
	// the setting at fault.
	Logger func() (zerolog.Logger, error)
}
