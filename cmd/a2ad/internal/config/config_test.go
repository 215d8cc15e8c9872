package config

import (
	"errors"
	"flag"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
	"github.com/a2ad/a2ad/exposure"
)

// cfgEnv returns a lookupEnv that sees only m.
func cfgEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// cfgTempFile writes content to name in a fresh temporary directory and
// returns its path.
func cfgTempFile(tb testing.TB, name, content string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

func cfgParse(tb testing.TB, args []string, env map[string]string) Config {
	tb.Helper()
	cfg, _, err := Parse("serve", args, cfgEnv(env), io.Discard)
	if err != nil {
		tb.Fatalf("Parse(%q, %v): %v", args, env, err)
	}
	return cfg
}

func TestParseConfig_Defaults(t *testing.T) {
	cfg := cfgParse(t, nil, nil)
	if diff := cmp.Diff(Default(), cfg); diff != "" {
		t.Errorf("ParseConfig with nothing set (-want +got):\n%s", diff)
	}
}

// TestParseConfig_Precedence checks defaults < file < environment < flags
// for a string, a bool, an int and a duration.
func TestParseConfig_Precedence(t *testing.T) {
	type want struct {
		tier      string
		exposeAll bool
		maxConc   int
		blocking  time.Duration
	}
	def := Default()
	defaults := want{def.Tier, def.ExposeAll, def.MaxConcurrent, def.BlockingTimeout}
	fromFile := want{"file-tier", true, 8, 90 * time.Second}
	fromEnv := want{"env-tier", false, 16, 2 * time.Minute}
	fromFlags := want{"flag-tier", true, 32, 5 * time.Second}

	allEnv := map[string]string{
		"A2AD_TIER":             "env-tier",
		"A2AD_EXPOSE_ALL":       "false",
		"A2AD_MAX_CONCURRENT":   "16",
		"A2AD_BLOCKING_TIMEOUT": "2m",
	}
	withConfig := func(env map[string]string) map[string]string {
		m := map[string]string{"A2AD_CONFIG": "testdata/config.yaml"}
		for k, v := range env {
			m[k] = v
		}
		return m
	}
	flags := []string{"--tier", "flag-tier", "--expose-all", "--max-concurrent", "32", "--blocking-timeout", "5s"}
	file := []string{"--config", "testdata/config.yaml"}

	tests := []struct {
		name string
		args []string
		env  map[string]string
		want want
	}{
		{"defaults", nil, nil, defaults},
		{"file by flag", file, nil, fromFile},
		{"file by environment", nil, withConfig(nil), fromFile},
		{"environment over file", file, allEnv, fromEnv},
		{"environment over file given by environment", nil, withConfig(allEnv), fromEnv},
		{"environment alone", nil, allEnv, fromEnv},
		{"flags over environment and file", append(append([]string{}, file...), flags...), allEnv, fromFlags},
		{"flags over file", append(append([]string{}, file...), flags...), nil, fromFlags},
		{"flags alone", flags, nil, fromFlags},
		{"one variable over file", file, map[string]string{"A2AD_TIER": "env-tier"}, want{"env-tier", true, 8, 90 * time.Second}},
		{"one flag over environment", []string{"--max-concurrent", "32"}, allEnv, want{"env-tier", false, 32, 2 * time.Minute}},
		{"false flag over true environment", []string{"--expose-all=false"}, map[string]string{"A2AD_EXPOSE_ALL": "true"}, defaults},
		{"false flag over true file", append(append([]string{}, file...), "--expose-all=false"), nil, want{"file-tier", false, 8, 90 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := cfgParse(t, tt.args, tt.env)
			got := want{cfg.Tier, cfg.ExposeAll, cfg.MaxConcurrent, cfg.BlockingTimeout}
			if got != tt.want {
				t.Errorf("Parse(%q, %v) = %+v, want %+v", tt.args, tt.env, got, tt.want)
			}
		})
	}
}

func TestParseConfig_ConfigFlagOverEnvironment(t *testing.T) {
	cfg := cfgParse(t, []string{"--config", "testdata/other.yaml"}, map[string]string{"A2AD_CONFIG": "testdata/config.yaml"})
	if cfg.Tier != "other-tier" || cfg.ConfigFile != "testdata/other.yaml" {
		t.Errorf("tier %q from config file %q, want other-tier from testdata/other.yaml", cfg.Tier, cfg.ConfigFile)
	}
	if cfg.MaxConcurrent != Default().MaxConcurrent {
		t.Errorf("max-concurrent = %d: the file named by A2AD_CONFIG was read too", cfg.MaxConcurrent)
	}
}

func TestParseConfig_HiddenPrefixes(t *testing.T) {
	cfg := cfgParse(t, []string{"--config", "testdata/config.yaml"}, nil)
	if cfg.HiddenPrefixes != "internal::,debug::" {
		t.Errorf("HiddenPrefixes = %q, want %q", cfg.HiddenPrefixes, "internal::,debug::")
	}
	if diff := cmp.Diff([]string{"internal::", "debug::"}, cfg.hiddenPrefixes()); diff != "" {
		t.Errorf("hiddenPrefixes() (-want +got):\n%s", diff)
	}

	cfg = cfgParse(t, []string{"--hidden-prefixes", " a:: , ,b::"}, nil)
	if diff := cmp.Diff([]string{"a::", "b::"}, cfg.hiddenPrefixes()); diff != "" {
		t.Errorf("hiddenPrefixes() of a flag (-want +got):\n%s", diff)
	}
	if got := (&Config{}).hiddenPrefixes(); len(got) != 0 {
		t.Errorf("hiddenPrefixes() of nothing = %q, want none", got)
	}
}

// TestConfigPolicy: the policy is the flags' tier, expose-all and hidden
// prefixes.
func TestConfigPolicy(t *testing.T) {
	cfg := cfgParse(t, []string{"--tier", "partner", "--expose-all", "--hidden-prefixes", "a::, b::"}, nil)
	want := exposure.Policy{ExposeAll: true, Tier: "partner", ExtraPrefixes: []string{"a::", "b::"}}
	if diff := cmp.Diff(want, cfg.Policy()); diff != "" {
		t.Errorf("Policy() (-want +got):\n%s", diff)
	}
	def := Default()
	if diff := cmp.Diff(exposure.Policy{}, def.Policy()); diff != "" {
		t.Errorf("Policy() of the defaults (-want +got):\n%s", diff)
	}
}

func TestParseConfig_RemainingArgs(t *testing.T) {
	_, rest, err := Parse("skills", []string{"--tier", "x", "catalog.yaml"}, cfgEnv(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"catalog.yaml"}, rest); diff != "" {
		t.Errorf("remaining args (-want +got):\n%s", diff)
	}
}

func TestParseConfig_FileErrors(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string // each must be in the error; ":N: ..." right after the path
	}{
		{"unknown key", "tier: partner\nbogus: 1\n", []string{`:2: unknown key "bogus"`}},
		{
			// The line is the key's, even when the value starts on the next line.
			"unknown keys with block values", "tier: partner\nnested:\n  - a\nother:\n  k: v\n",
			[]string{`:2: unknown key "nested"`, `:4: unknown key "other"`},
		},
		{"config key", "config: other.yaml\n", []string{`:1: unknown key "config"`}},
		{"bad int", "tier: x\nmax-concurrent: lots\n", []string{`:2: max-concurrent: `}},
		{"bad bool", "expose-all: maybe\n", []string{`:1: expose-all: `}},
		{"bad duration", "\n\nblocking-timeout: soon\n", []string{`:3: blocking-timeout: `}},
		{"mapping value", "tier:\n  a: 1\n", []string{`:1: tier must be a scalar or a list`}},
		{
			// Unquoted, "- debug::" is a mapping; a prefix must never be
			// dropped without a word.
			"unquoted prefix ending in a colon", "hidden-prefixes:\n  - \"a::\"\n  - debug::\n",
			[]string{`:3: hidden-prefixes: each item must be a string`},
		},
		{"duplicate key", "tier: a\ntier: b\n", []string{`:2: duplicate key "tier" (first at line 1)`}},
		{"not a mapping", "- tier\n", []string{`:1: must be a mapping`}},
		{"not YAML", "tier: [\n", []string{"config file "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := cfgTempFile(t, "a2ad.yaml", tt.content)
			_, _, err := Parse("serve", []string{"--config", path}, cfgEnv(nil), io.Discard)
			if err == nil {
				t.Fatalf("ParseConfig of %q: no error", tt.content)
			}
			for _, w := range tt.want {
				if strings.HasPrefix(w, ":") { // a line number: it follows the path
					w = path + w
				}
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseConfig_EmptyFile(t *testing.T) {
	path := cfgTempFile(t, "a2ad.yaml", "# nothing set\n")
	cfg := cfgParse(t, []string{"--config", path}, nil)
	want := Default()
	want.ConfigFile = path
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("empty config file (-want +got):\n%s", diff)
	}
}

func TestParseConfig_MissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.yaml")
	for _, tc := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"--config", missing}, nil},
		{nil, map[string]string{"A2AD_CONFIG": missing}},
	} {
		_, _, err := Parse("serve", tc.args, cfgEnv(tc.env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "config file") || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Parse(%q, %v) error = %v, want a config file error wrapping os.ErrNotExist", tc.args, tc.env, err)
		}
	}
}

func TestParseConfig_BadEnvironment(t *testing.T) {
	for _, name := range []string{"A2AD_MAX_CONCURRENT", "A2AD_MAX_BODY_BYTES", "A2AD_EXPOSE_ALL", "A2AD_BLOCKING_TIMEOUT"} {
		_, _, err := Parse("serve", nil, cfgEnv(map[string]string{name: "abc"}), io.Discard)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=abc: error = %v, want one naming %s", name, err, name)
		}
	}
}

func TestParseConfig_BadFlag(t *testing.T) {
	_, _, err := Parse("serve", []string{"--max-concurrent", "abc"}, cfgEnv(nil), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "max-concurrent") {
		t.Errorf("--max-concurrent abc: error = %v, want one naming the flag", err)
	}
	_, _, err = Parse("serve", []string{"--no-such-flag"}, cfgEnv(nil), io.Discard)
	if err == nil {
		t.Error("--no-such-flag: no error")
	}
	_, _, err = Parse("serve", []string{"-h"}, cfgEnv(nil), io.Discard)
	if !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: error = %v, want flag.ErrHelp", err)
	}
}

func TestEnvName(t *testing.T) {
	tests := map[string]string{
		"max-body-bytes": "A2AD_MAX_BODY_BYTES",
		"tier":           "A2AD_TIER",
		"expose-all":     "A2AD_EXPOSE_ALL",
		"config":         "A2AD_CONFIG",
		"base-url":       "A2AD_BASE_URL",
	}
	for in, want := range tests {
		if got := cli.EnvName(in); got != want {
			t.Errorf("cli.EnvName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEnvNames checks that every flag can be set from its variable.
func TestEnvNames(t *testing.T) {
	var cfg Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.Flags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "config" {
			return
		}
		want := "A2AD_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if cli.EnvName(f.Name) != want {
			t.Errorf("cli.EnvName(%q) = %q, want %q", f.Name, cli.EnvName(f.Name), want)
		}
	})
}

func TestValidate(t *testing.T) {
	checkValidate(t, []validateCase{
		{"defaults with a catalogue", func(*Config) {}, ""},
		{"console logs", func(c *Config) { c.LogFormat = "console" }, ""},
		{"no queue", func(c *Config) { c.MaxQueue = 0 }, ""},
		{"no shutdown grace", func(c *Config) { c.ShutdownGrace = 0 }, ""},
		{"catalog missing", func(c *Config) { c.Catalog = "" }, "catalog: no catalogue file given (--catalog or A2AD_CATALOG)"},
		{"store missing", func(c *Config) { c.Store = "" }, "store: no store file given"},
		{"listen on all IPv4 addresses", func(c *Config) { c.Listen = "0.0.0.0:8080" },
			"listen 0.0.0.0:8080: listening on all addresses needs --base-url, the URL clients reach a2ad at"},
		{"listen on all IPv6 addresses", func(c *Config) { c.Listen = "[::]:8080" },
			"listen [::]:8080: listening on all addresses needs --base-url, the URL clients reach a2ad at"},
		{"listen on a port only", func(c *Config) { c.Listen = ":8080" },
			"listen :8080: listening on all addresses needs --base-url, the URL clients reach a2ad at"},
		{"listen on all addresses with a base URL", func(c *Config) { c.Listen = "0.0.0.0:8080"; c.BaseURL = "https://a2a.example.com" }, ""},
		{"listen on a host name", func(c *Config) { c.Listen = "localhost:8080" }, ""},
		{"log format xml", func(c *Config) { c.LogFormat = "xml" }, `log-format: must be json, console or auto, not "xml"`},
		{"tier list", func(c *Config) { c.Tier = "internal,partner" }, `tier: one tier name, not a list ("internal,partner"): the server-wide tier caps every caller; a caller of the keys file may have several`},
		{"max body bytes 0", func(c *Config) { c.MaxBodyBytes = 0 }, "max-body-bytes: must be positive, not 0"},
		{"max concurrent 0", func(c *Config) { c.MaxConcurrent = 0 }, "max-concurrent: must be positive, not 0"},
		{"max concurrent negative", func(c *Config) { c.MaxConcurrent = -3 }, "max-concurrent: must be positive, not -3"},
		{"max queue negative", func(c *Config) { c.MaxQueue = -1 }, "max-queue: must not be negative, not -1"},
		{"mcp task after negative", func(c *Config) { c.MCPTaskAfter = -time.Second }, "mcp-task-after: must not be negative (0 for no handles), not -1s"},
		{"blocking timeout 0", func(c *Config) { c.BlockingTimeout = 0 }, "blocking-timeout: must be positive, not 0s"},
		{"retention negative", func(c *Config) { c.Retention = -time.Hour }, "retention: must be positive, not -1h0m0s"},
		{"retention interval 0", func(c *Config) { c.RetentionInterval = 0 }, "retention-interval: must be positive, not 0s"},
		{"lease ttl too short", func(c *Config) { c.LeaseTTL = 50 * time.Millisecond }, "lease-ttl: must be at least 100ms, not 50ms"},
		{"shutdown grace negative", func(c *Config) { c.ShutdownGrace = -time.Second }, "shutdown-grace: must not be negative, not -1s"},
		{"trusted proxies", func(c *Config) { c.TrustedProxies = "127.0.0.1/32, 10.0.0.0/8,::1,2001:db8::/32,::ffff:10.0.0.0/104" }, ""},
		{"trusted proxy not a CIDR", func(c *Config) { c.TrustedProxies = "10.0.0.0/8,proxy.local" },
			`trusted-proxies: "proxy.local" is not a CIDR or an address`},
		{"trusted proxies beyond IPv4-mapped", func(c *Config) { c.TrustedProxies = "::ffff:0:0/80" },
			`trusted-proxies: "::ffff:0:0/80" reaches beyond the IPv4-mapped addresses; give IPv4 and IPv6 ranges apart`},
		{"cors origins", func(c *Config) { c.CORSOrigins = "https://app.example, http://127.0.0.1:5173" }, ""},
		{"cors for the card only", func(c *Config) { c.CORSOrigins = "*" }, ""},
		{"cors origin with a path", func(c *Config) { c.CORSOrigins = "https://app.example,https://ui.example/app" },
			`cors-origins: "https://ui.example/app": an origin has no path, query or fragment: want scheme://host[:port]`},
		{"cors star and origins", func(c *Config) { c.CORSOrigins = "*,https://app.example" },
			`cors-origins: "*" stands alone: it opens the card to every origin and the other routes to none; give "*" or a list of origins`},
		{"rate buckets 0", func(c *Config) { c.RateBuckets = 0 }, "rate-buckets: must be at least 1, not 0"},
		{"auth fail rate negative", func(c *Config) { c.AuthFailRate = -1 }, "auth-fail-rate: must be a finite number >= 0, not -1"},
		{"auth fail rate off", func(c *Config) { c.AuthFailRate, c.AuthFailBurst = 0, 0 }, ""},
		{"auth fail burst 0", func(c *Config) { c.AuthFailBurst = 0 }, "auth-fail-burst: must be at least 1, not 0"},
		{"no connection caps", func(c *Config) { c.MaxConns, c.MaxConnsPerIP = 0, 0 }, ""},
		{"no body rate floor", func(c *Config) { c.MinBodyRate = 0 }, ""},
		{"read header timeout 0", func(c *Config) { c.ReadHeaderTimeout = 0 }, "read-header-timeout: must be positive, not 0s"},
		{"read timeout negative", func(c *Config) { c.ReadTimeout = -time.Second }, "read-timeout: must be positive, not -1s"},
		{"min body rate negative", func(c *Config) { c.MinBodyRate = -1 }, "min-body-rate: must not be negative, not -1"},
		{"idle timeout 0", func(c *Config) { c.IdleTimeout = 0 }, "idle-timeout: must be positive, not 0s"},
		{"max conns negative", func(c *Config) { c.MaxConns = -1 }, "max-conns: must not be negative, not -1"},
		{"max conns per ip negative", func(c *Config) { c.MaxConnsPerIP = -2 }, "max-conns-per-ip: must not be negative, not -2"},
		{"no storage limits", func(c *Config) { c.QuotaTasks, c.QuotaBytes, c.MaxHistory, c.MaxTaskArtifactBytes = 0, 0, 0, 0 }, ""},
		{"quota tasks negative", func(c *Config) { c.QuotaTasks = -1 }, "quota-tasks: must not be negative (0 for no limit), not -1"},
		{"quota bytes negative", func(c *Config) { c.QuotaBytes = -1 }, "quota-bytes: must not be negative (0 for no limit), not -1"},
		{"max history negative", func(c *Config) { c.MaxHistory = -1 }, "max-history: must not be negative (0 for no limit), not -1"},
		{"max task artifact bytes negative", func(c *Config) { c.MaxTaskArtifactBytes = -1 }, "max-task-artifact-bytes: must not be negative (0 for no limit), not -1"},
		{"history read bytes negative", func(c *Config) { c.HistoryReadBytes = -1 }, "history-read-bytes: must not be negative (0 for no limit), not -1"},
		{"list page bytes negative", func(c *Config) { c.ListPageBytes = -1 }, "list-page-bytes: must not be negative (0 for no limit), not -1"},
		{"answer bytes negative", func(c *Config) { c.AnswerBytesPerCaller = -1 }, "max-answer-bytes-per-caller: must not be negative (0 for no cap), not -1"},
		{"no call cap nor byte rate", func(c *Config) { c.MaxCallsPerCaller, c.RateBytes = 0, 0 }, ""},
		{"max calls per caller negative", func(c *Config) { c.MaxCallsPerCaller = -1 }, "max-calls-per-caller: must not be negative (0 for no cap), not -1"},
		{"rate bytes negative", func(c *Config) { c.RateBytes = -1 }, "rate-bytes: must not be negative (0 for no limit), not -1"},
		{"rate bytes burst below the body cap", func(c *Config) { c.MaxBodyBytes, c.RateBytesBurst = 2<<20, 1<<20 },
			"rate-bytes-burst: must be at least --max-body-bytes (2097152) and at most 2147483647, not 1048576"},
		{"rate bytes burst the body cap", func(c *Config) { c.MaxBodyBytes, c.RateBytesBurst = 16<<20, 16<<20 }, ""},
		{"rate bytes burst past 2 GiB", func(c *Config) { c.RateBytesBurst = 1 << 31 },
			"rate-bytes-burst: must be at least --max-body-bytes (1048576) and at most 2147483647, not 2147483648"},
		{"oidc", func(c *Config) { c.OIDCIssuer, c.OIDCAudience = "https://id.example.com/realms/a2a", "a2ad" }, ""},
		{"oidc on loopback http", func(c *Config) { c.OIDCIssuer, c.OIDCAudience = "http://127.0.0.1:9000", "a2ad" }, ""},
		{"oidc over http", func(c *Config) { c.OIDCIssuer, c.OIDCAudience = "http://id.example.com", "a2ad" },
			`oidc-issuer: must be an https URL (http only on a loopback address), not "http://id.example.com"`},
		{"oidc not a URL", func(c *Config) { c.OIDCIssuer, c.OIDCAudience = "id.example.com", "a2ad" },
			`oidc-issuer: must be an https URL (http only on a loopback address), not "id.example.com"`},
		{"oidc without audience", func(c *Config) { c.OIDCIssuer = "https://id.example.com" },
			"oidc-audience: required with --oidc-issuer (what its tokens' aud must hold)"},
		{"oidc audience alone", func(c *Config) { c.OIDCAudience = "a2ad" }, "oidc-audience: only means something with --oidc-issuer"},
		{"otel endpoint", func(c *Config) { c.OTelEndpoint = "http://127.0.0.1:4318" }, ""},
		{"otel endpoint with a path", func(c *Config) { c.OTelEndpoint = "https://collector.example.com/otlp/" }, ""},
		{"otel endpoint without a scheme", func(c *Config) { c.OTelEndpoint = "127.0.0.1:4318" },
			`otel-endpoint: must be an http or https URL with a host and no query (a collector's base, such as http://127.0.0.1:4318), not "127.0.0.1:4318"`},
		{"otel endpoint with a query", func(c *Config) { c.OTelEndpoint = "http://127.0.0.1:4318/?x=1" },
			`otel-endpoint: must be an http or https URL with a host and no query (a collector's base, such as http://127.0.0.1:4318), not "http://127.0.0.1:4318/?x=1"`},
		{"oidc without caller claim", func(c *Config) {
			c.OIDCIssuer, c.OIDCAudience, c.OIDCCallerClaim = "https://id.example.com", "a2ad", ""
		},
			"oidc-caller-claim: must name a claim"},
		{"anonymous with oidc", func(c *Config) {
			c.OIDCIssuer, c.OIDCAudience, c.AllowAnonymous, c.AnonymousTiers = "https://id.example.com", "a2ad", true, "public"
		}, ""},
		{"anonymous alone", func(c *Config) { c.AllowAnonymous, c.AnonymousTiers = true, "public" },
			"allow-anonymous: only means something with --keys or --oidc-issuer (without them every caller is anonymous)"},
	})
}

// validateCase is a change to a valid configuration (the defaults with a
// catalogue) and the error Validate must then return, "" for none.
type validateCase struct {
	name   string
	mutate func(*Config)
	want   string
}

func checkValidate(t *testing.T, cases []validateCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.Catalog = "catalog.yaml"
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestTrustedProxiesParse(t *testing.T) {
	c := Config{TrustedProxies: "10.1.2.3/8, 192.0.2.7, 2001:db8::1, ::ffff:10.0.0.0/104"}
	got, err := c.TrustedProxyList()
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"),
		netip.MustParsePrefix("2001:db8::1/128"), netip.MustParsePrefix("10.0.0.0/8")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("trustedProxies() = %v, want %v", got, want)
	}
}

// TestSystemdExampleConfig keeps the shipped production config valid.
func TestSystemdExampleConfig(t *testing.T) {
	cfg, _, err := Parse("serve", []string{"--config", "../../../../examples/systemd/a2ad.yaml"}, cfgEnv(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Keys != "/etc/a2ad/keys.yaml" || cfg.AdminListen != "127.0.0.1:8081" || cfg.ShutdownGrace != 30*time.Second || cfg.AuditLog != "/var/log/a2ad/audit.log" ||
		cfg.TrustedProxies != "127.0.0.1/32" {
		t.Errorf("example config read as %+v", cfg)
	}
}

func TestAllowAnonymousNeedsATier(t *testing.T) {
	c := Default()
	c.Catalog, c.Keys, c.AllowAnonymous = "c.yaml", "k.yaml", true
	if err := c.Validate(); err == nil || err.Error() != "allow-anonymous: needs --anonymous-tier, the tiers anonymous callers may see (e.g. public)" {
		t.Fatalf("Validate = %v", err)
	}
	c.AnonymousTiers = " , "
	if err := c.Validate(); err == nil {
		t.Fatal("a blank --anonymous-tier passed")
	}
	c.AnonymousTiers = "public"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateTLS(t *testing.T) {
	checkValidate(t, []validateCase{
		{"certificate and key", func(c *Config) { c.TLSCert, c.TLSKey = "cert.pem", "key.pem" }, ""},
		{"mutual TLS", func(c *Config) {
			c.TLSCert, c.TLSKey, c.TLSClientCA, c.Keys = "cert.pem", "key.pem", "ca.pem", "keys.yaml"
		}, ""},
		{"certificate without key", func(c *Config) { c.TLSCert = "cert.pem" }, "tls-key: --tls-cert needs its private key"},
		{"key without certificate", func(c *Config) { c.TLSKey = "key.pem" }, "tls-cert: --tls-key needs its certificate"},
		{"client CAs without a certificate", func(c *Config) { c.TLSClientCA, c.Keys = "ca.pem", "keys.yaml" },
			"tls-client-ca: mutual TLS needs --tls-cert and --tls-key too"},
		{"client CAs without keys", func(c *Config) { c.TLSCert, c.TLSKey, c.TLSClientCA = "cert.pem", "key.pem", "ca.pem" },
			"tls-client-ca: needs --keys, whose tls_subjects map client certificates to callers"},
	})
}
