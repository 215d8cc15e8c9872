// Package catalogcmd is the commands that work on a catalogue file alone,
// with no server and no store: a2ad validate (does it load), a2ad skills
// (what a tier or a caller sees, and why the rest is hidden) and a2ad call
// (run one function once, locally, as the server would). UnnamedTiers,
// the check that each tier in force is named in the catalogue, warns in
// skills and in serve.
package catalogcmd
