// Package config is a2ad's settings: each a field of Config, a flag of
// the commands that read settings, an environment variable (A2AD_ and the
// flag name in upper snake case) and a key of the YAML config file; flags
// win over the environment, which wins over the file. It holds their
// defaults, their groups (serve --help and docs/reference/flags.md list
// them so), which commands take which flags, and the rules a server's
// settings must keep (Validate), each problem named by its flag.
//
// It reads settings and checks them; it opens nothing. Package main
// wires what they name.
package config
