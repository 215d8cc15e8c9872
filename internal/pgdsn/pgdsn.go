// Package pgdsn names the PostgreSQL server the project's tests and
// benchmarks use: A2AD_TEST_POSTGRES, or the server of the project's
// machines. It is apart from internal/pgtest so that a2abench, which is
// no test, can read it without linking the testing package.
package pgdsn

import (
	"net/url"
	"os"
)

// Default is the server of the project's machines: PostgreSQL at
// 127.0.0.1:5432, trust authentication, database test, user postgres.
const Default = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// DSN is the server to use: A2AD_TEST_POSTGRES, or Default.
func DSN() string {
	if dsn := os.Getenv("A2AD_TEST_POSTGRES"); dsn != "" {
		return dsn
	}
	return Default
}

// Host is the host and port of dsn, for messages: never its user or
// password.
func Host(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		return "(unparsable A2AD_TEST_POSTGRES)"
	}
	return u.Host
}
