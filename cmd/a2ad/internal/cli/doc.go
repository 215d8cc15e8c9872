// Package cli is what a2ad's commands share on the command line: the
// surroundings a command runs in (Env), flags parsed with one short error
// and a guess at a typo, the answers to an unknown command and to bad
// usage, the lines of a file that does not load, and the settings' other
// sources, the environment and a YAML file.
//
// It knows no command: package main dispatches to the command packages
// beside this one, each of which imports it.
package cli
