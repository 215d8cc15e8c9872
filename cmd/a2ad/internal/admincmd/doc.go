// Package admincmd is the operator's commands that work through a
// running a2ad's admin listener, with admin.Client: a2ad tasks (list,
// get, cancel), a2ad push (the dead letters: list, retry, drop) and a2ad
// reload. It decodes the JSON the endpoints serve into the admin
// package's types, so the text and --json outputs never disagree.
package admincmd
