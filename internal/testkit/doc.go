// Package testkit holds the helpers that the tests of several packages
// share, so that each is written once. Only tests import it (its own test
// checks that).
package testkit
