package config

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/cli"
	"github.com/a2ad/a2ad/exposure"
	"github.com/a2ad/a2ad/tasks"
	"github.com/a2ad/a2ad/transport/httpx"
	"github.com/a2ad/a2ad/transport/mcp"
)

// Config is every setting of the a2ad command. Each field is a flag, an
// environment variable (A2AD_ and the flag name in upper snake case) and a
// key of the optional config file; flags win over the environment, which
// wins over the file.
type Config struct {
	ConfigFile string

	Listen      string
	AdminListen string // "" for no admin listener
	GRPCListen  string // "" for no gRPC binding
	MCP         bool   // serve MCP at /mcp while the catalogue opts a function into it
	// MCPTaskAfter: a tools/call of a client that declares MCP's tasks
	// extension answers with a task handle once it runs this long; 0 never.
	MCPTaskAfter time.Duration
	BaseURL      string
	Catalog      string
	Store        string

	Tier           string
	ExposeAll      bool
	HiddenPrefixes string // comma-separated

	Name             string
	Description      string
	ProviderOrg      string
	ProviderURL      string
	DocumentationURL string
	IconURL          string

	LogFormat string
	LogLevel  string

	MaxBodyBytes      int64
	MaxConcurrent     int
	MaxQueue          int
	BlockingTimeout   time.Duration
	Retention         time.Duration
	RetentionInterval time.Duration
	ShutdownGrace     time.Duration
	ShutdownDelay     time.Duration // serving on after SIGTERM, /readyz failing, before the drain
	StoreLockTimeout  time.Duration
	StoreMaxConns     int // connections to a PostgreSQL store
	LeaseTTL          time.Duration
	KeepAlive         time.Duration

	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	MinBodyRate       int64 // bytes a second; 0 for no floor
	IdleTimeout       time.Duration
	MaxConns          int // 0 for no cap
	MaxConnsPerIP     int // 0 for no cap

	OTelEndpoint string // an OTLP/HTTP collector's base URL; "" leaves it to OTEL_EXPORTER_OTLP_ENDPOINT, if set

	Keys                 string  // the keys file; "" serves everyone as anonymous
	OIDCIssuer           string  // an OpenID Connect issuer whose tokens identify callers; "" for none
	OIDCAudience         string  // what its tokens' aud must hold
	OIDCCallerClaim      string  // the claim that is the caller id
	OIDCTiersClaim       string  // the claim that lists the caller's tiers
	AllowAnonymous       bool    // with keys or tokens, serve requests without one too
	AnonymousTiers       string  // comma-separated tiers of anonymous callers
	RatePerSecond        float64 // default per-caller rate; 0 for none
	RateBurst            int
	MaxInFlightPerCaller int // 0 for no cap
	MaxInFlight          int // 0 for no cap
	AuditLog             string
	TrustedProxies       string  // comma-separated CIDRs (or addresses) of reverse proxies
	CORSOrigins          string  // comma-separated origins web pages may call from, or "*" for the card only
	RateBuckets          int     // the most client addresses tracked for limits
	AuthFailRate         float64 // failed authentications a second per address; 0 for no throttle
	AuthFailBurst        int

	QuotaTasks           int64 // tasks a caller may keep stored; 0 for no limit
	QuotaBytes           int64 // bytes a caller's tasks may take; 0 for no limit
	MaxHistory           int   // messages one task may hold; 0 for no limit
	MaxTaskArtifactBytes int64 // bytes one task's artifacts may take; 0 for no limit
	HistoryReadBytes     int64 // bytes of history one answer carries at most; 0 for no limit
	ListPageBytes        int64 // bytes of tasks one list page carries at most; 0 for no limit
	AnswerBytesPerCaller int64 // bytes of one caller's read answers in flight; 0 for no cap

	MaxCallsPerCaller int   // calls one caller may have running or waiting; 0 for no cap
	RateBytes         int64 // request body bytes a second per caller; 0 for no limit
	RateBytesBurst    int64 // the bytes a caller may send at once before RateBytes applies

	PushAllow       string // comma-separated CIDRs and host names
	PushTimeout     time.Duration
	PushMaxAttempts int
	PushConcurrency int

	TLSCert     string // PEM certificate chain of every listener; "" for plain HTTP
	TLSKey      string // its PEM private key
	TLSClientCA string // PEM CAs of client certificates (mutual TLS); "" for none

	CardSigningKeys []string // PEM private keys that sign the card, each in turn; none for an unsigned card

	A2A a2aConfig

	// Format is the output format of the skills command: text or json.
	Format string
	// Protocol is the protocol whose view the skills command shows.
	Protocol string
	Caller   string // the caller of --keys whose view skills shows; "" for none
}

// Default returns the defaults.
func Default() Config {
	return Config{
		Listen:               "127.0.0.1:8080",
		AdminListen:          "127.0.0.1:8081",
		MCP:                  true,
		MCPTaskAfter:         mcp.DefaultTaskAfter,
		Store:                "a2ad.db",
		Name:                 "a2ad",
		Description:          "Operator functions published as A2A skills, each call a durable task.",
		LogFormat:            "auto",
		LogLevel:             "info",
		MaxBodyBytes:         1 << 20,
		MaxConcurrent:        64,
		MaxQueue:             1024,
		BlockingTimeout:      60 * time.Second,
		Retention:            30 * 24 * time.Hour,
		RetentionInterval:    time.Minute,
		ShutdownGrace:        10 * time.Second,
		StoreLockTimeout:     2 * time.Second,
		StoreMaxConns:        16,
		LeaseTTL:             tasks.DefaultLeaseTTL,
		KeepAlive:            15 * time.Second,
		ReadHeaderTimeout:    5 * time.Second,
		ReadTimeout:          30 * time.Second,
		MinBodyRate:          1024,
		IdleTimeout:          time.Minute,
		MaxConns:             4096,
		MaxConnsPerIP:        256,
		RatePerSecond:        100,
		RateBurst:            200,
		MaxInFlightPerCaller: 256,
		MaxInFlight:          4096,
		RateBuckets:          100_000,
		AuthFailRate:         1,
		OIDCCallerClaim:      "sub",
		OIDCTiersClaim:       "a2a_tiers",
		AuthFailBurst:        20,
		QuotaTasks:           100000,
		QuotaBytes:           1 << 30,
		MaxHistory:           100,
		MaxTaskArtifactBytes: 16 << 20,
		HistoryReadBytes:     4 << 20,
		ListPageBytes:        4 << 20,
		AnswerBytesPerCaller: 8 << 20,
		MaxCallsPerCaller:    32,
		RateBytes:            1 << 20,
		RateBytesBurst:       8 << 20,
		PushTimeout:          10 * time.Second,
		PushMaxAttempts:      8,
		PushConcurrency:      16,
		Format:               "text",
		Protocol:             "a2a",
	}
}

// defaultsFor is the default configuration of command name: a2ad call,
// the dev loop of a function's author, logs everything (the function's
// stderr, an excerpt of a result that is not JSON) for a human.
func defaultsFor(name string) Config {
	c := Default()
	if name == "call" {
		c.LogLevel, c.LogFormat = "debug", "console"
	}
	return c
}

// Flags binds every setting to fs.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.ConfigFile, "config", c.ConfigFile, "optional YAML config file; its keys are the flag names")
	fs.StringVar(&c.Listen, "listen", c.Listen, "address to listen on; binding beyond loopback is an explicit choice (a2ad warns), and all addresses (0.0.0.0:8080) need --base-url")
	fs.StringVar(&c.GRPCListen, "grpc-listen", c.GRPCListen, "address of the A2A 1.0 gRPC binding (lf.a2a.v1.A2AService; TLS with --tls-cert, else plaintext); empty for none; binding beyond loopback is an explicit choice")
	fs.BoolVar(&c.MCP, "mcp", c.MCP, "serve the functions the catalogue opts into MCP (\"mcp.expose\") as MCP tools at /mcp on the main listener (Streamable HTTP, stateless) while it opts any in; false for never")
	fs.DurationVar(&c.MCPTaskAfter, "mcp-task-after", c.MCPTaskAfter, "an MCP tools/call of a client that declares the tasks extension (io.modelcontextprotocol/tasks) and runs this long answers with a task handle, polled with tasks/get; 0 for never")
	fs.StringVar(&c.AdminListen, "admin-listen", c.AdminListen, "address of the admin listener (metrics, operator views, backups, reload); empty for none; keep it on loopback")
	fs.StringVar(&c.BaseURL, "base-url", c.BaseURL, "absolute http(s) URL clients reach a2ad at (default http://<listen>)")
	fs.StringVar(&c.Catalog, "catalog", c.Catalog, "function catalogue file (YAML or JSON)")
	fs.StringVar(&c.Store, "store", c.Store, "where every task is kept: a bbolt file, or a postgres:// URL of a PostgreSQL database that several a2ad may share")
	fs.StringVar(&c.Tier, "tier", c.Tier, "expose only functions whose \"a2a.tier\" names this tier")
	fs.BoolVar(&c.ExposeAll, "expose-all", c.ExposeAll, "expose every function without the \"a2a.expose\" opt-in (the hard floor and --tier still apply)")
	fs.StringVar(&c.HiddenPrefixes, "hidden-prefixes", c.HiddenPrefixes, "comma-separated id prefixes to hide, in addition to the hard floor")
	fs.StringVar(&c.Name, "name", c.Name, "agent name on the card")
	fs.StringVar(&c.Description, "description", c.Description, "agent description on the card")
	fs.StringVar(&c.ProviderOrg, "provider-org", c.ProviderOrg, "provider organization on the card (shown only with --provider-url)")
	fs.StringVar(&c.ProviderURL, "provider-url", c.ProviderURL, "provider URL on the card (shown only with --provider-org)")
	fs.StringVar(&c.DocumentationURL, "documentation-url", c.DocumentationURL, "documentation URL on the card")
	fs.StringVar(&c.IconURL, "icon-url", c.IconURL, "icon URL on the card")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "log format: json, console, or auto (console on a terminal, else json)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log level: debug, info, warn or error (debug logs every request)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", c.MaxBodyBytes, "largest JSON-RPC request body accepted (larger gets HTTP 413)")
	fs.IntVar(&c.MaxConcurrent, "max-concurrent", c.MaxConcurrent, "calls running at once, across all functions")
	fs.IntVar(&c.MaxQueue, "max-queue", c.MaxQueue, "calls waiting for a slot; beyond it a call is refused with -32050")
	fs.DurationVar(&c.BlockingTimeout, "blocking-timeout", c.BlockingTimeout, "longest a blocking message/send waits before returning the task as it stands")
	fs.DurationVar(&c.Retention, "retention", c.Retention, "how long terminal tasks are kept")
	fs.DurationVar(&c.RetentionInterval, "retention-interval", c.RetentionInterval, "how often expired tasks are deleted")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", c.ShutdownGrace, "how long running calls may finish on shutdown")
	fs.DurationVar(&c.ShutdownDelay, "shutdown-delay", c.ShutdownDelay, "on SIGTERM, how long /readyz fails while new work is still served, before the drain: longer than a load balancer takes to stop sending (its health check interval times its unhealthy threshold)")
	fs.DurationVar(&c.StoreLockTimeout, "store-lock-timeout", c.StoreLockTimeout, "how long to wait for a store file another process holds")
	fs.IntVar(&c.StoreMaxConns, "store-max-conns", c.StoreMaxConns, "connections a2ad keeps to a PostgreSQL store at most (its pool)")
	fs.DurationVar(&c.LeaseTTL, "lease-ttl", c.LeaseTTL, "how long a replica's lease on its running calls lasts without a heartbeat; then another replica takes them over")
	fs.DurationVar(&c.KeepAlive, "sse-keepalive", c.KeepAlive, "interval of keep-alive comments on open streams")
	fs.DurationVar(&c.ReadHeaderTimeout, "read-header-timeout", c.ReadHeaderTimeout, "longest a request's headers may take to arrive; then the connection is closed")
	fs.DurationVar(&c.ReadTimeout, "read-timeout", c.ReadTimeout, "longest a request's body may take to arrive once its headers are in (a late body gets HTTP 408); streams' responses are not limited")
	fs.Int64Var(&c.MinBodyRate, "min-body-rate", c.MinBodyRate, "slowest a request body may arrive on average, in bytes a second, after a 5 s grace (slower gets HTTP 408); 0 for no floor")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "how long an idle keep-alive connection stays open")
	fs.IntVar(&c.MaxConns, "max-conns", c.MaxConns, "connections open at once on --listen; past it a2ad stops accepting until one closes (lowered to fit the open-file limit); 0 for no cap")
	fs.IntVar(&c.MaxConnsPerIP, "max-conns-per-ip", c.MaxConnsPerIP, "connections open at once from one client address (an IPv6 /64); more are closed at once; behind a proxy, raise it; 0 for no cap")
	fs.StringVar(&c.OTelEndpoint, "otel-endpoint", c.OTelEndpoint, "base URL of an OTLP/HTTP collector (such as http://127.0.0.1:4318) to export traces to; empty: the standard OTEL_EXPORTER_OTLP_ENDPOINT if set, else no traces")
	fs.StringVar(&c.Keys, "keys", c.Keys, "API keys file (see a2ad keys create); with it, callers need a key unless --allow-anonymous")
	fs.StringVar(&c.OIDCIssuer, "oidc-issuer", c.OIDCIssuer, "URL of an OpenID Connect issuer whose JWTs (Authorization: Bearer) identify callers too; with it, callers need a key or a token unless --allow-anonymous")
	fs.StringVar(&c.OIDCAudience, "oidc-audience", c.OIDCAudience, "what the aud of --oidc-issuer's tokens must hold (required with it)")
	fs.StringVar(&c.OIDCCallerClaim, "oidc-caller-claim", c.OIDCCallerClaim, "the token claim that is the caller id")
	fs.StringVar(&c.OIDCTiersClaim, "oidc-tiers-claim", c.OIDCTiersClaim, "the token claim that lists the caller's tiers (a list, or a string of tiers separated by spaces or commas)")
	fs.BoolVar(&c.AllowAnonymous, "allow-anonymous", c.AllowAnonymous, "with --keys or --oidc-issuer, also serve requests without credentials, as the anonymous caller")
	fs.StringVar(&c.AnonymousTiers, "anonymous-tier", c.AnonymousTiers, "comma-separated tiers of the anonymous caller (e.g. public); the public card shows its view")
	fs.Float64Var(&c.RatePerSecond, "rate", c.RatePerSecond, "requests a second per caller, for keys without a rate of their own and anonymous callers (per IP); 0 for no limit")
	fs.IntVar(&c.RateBurst, "rate-burst", c.RateBurst, "requests a caller may make at once before --rate applies")
	fs.IntVar(&c.MaxInFlightPerCaller, "max-inflight-per-caller", c.MaxInFlightPerCaller, "requests (streams included) one caller may have in flight; 0 for no cap")
	fs.IntVar(&c.MaxInFlight, "max-inflight", c.MaxInFlight, "requests (streams included) in flight across all callers; 0 for no cap")
	fs.StringVar(&c.TrustedProxies, "trusted-proxies", c.TrustedProxies, "comma-separated CIDRs of reverse proxies whose X-Forwarded-For or Forwarded header names the client (e.g. 127.0.0.1/32); empty trusts none")
	fs.StringVar(&c.CORSOrigins, "cors-origins", c.CORSOrigins, "comma-separated origins (scheme://host[:port]) whose web pages may read the card and call a2ad in a browser, or \"*\" for the card only; empty for none")
	fs.IntVar(&c.RateBuckets, "rate-buckets", c.RateBuckets, "client addresses tracked for anonymous rate limits, and for failed authentications; beyond it idle ones are forgotten")
	fs.Float64Var(&c.AuthFailRate, "auth-fail-rate", c.AuthFailRate, "failed authentications a second one client address may make once --auth-fail-burst is spent; beyond it its requests get 429 unchecked; 0 for no limit")
	fs.IntVar(&c.AuthFailBurst, "auth-fail-burst", c.AuthFailBurst, "failed authentications one client address may make at once before --auth-fail-rate applies")
	fs.Int64Var(&c.QuotaTasks, "quota-tasks", c.QuotaTasks, "tasks one caller may keep stored (keys: quota_tasks); beyond it a new task is refused with -32055; 0 for no limit")
	fs.Int64Var(&c.QuotaBytes, "quota-bytes", c.QuotaBytes, "bytes one caller's stored tasks may take (keys: quota_bytes); beyond it a new task or message is refused with -32055; 0 for no limit")
	fs.IntVar(&c.MaxHistory, "max-history", c.MaxHistory, "messages one task's history may hold (keys: max_history); beyond it a message is refused with -32056; 0 for no limit")
	fs.Int64Var(&c.HistoryReadBytes, "history-read-bytes", c.HistoryReadBytes, "bytes of history one answer (get, send, list, a stream's first task) carries at most: the newest messages that fit; 0 for no limit")
	fs.Int64Var(&c.ListPageBytes, "list-page-bytes", c.ListPageBytes, "bytes of tasks one list page carries at most: the page ends early, with a nextPageToken, before the task that would pass it (its first task always comes); 0 for no limit")
	fs.Int64Var(&c.AnswerBytesPerCaller, "max-answer-bytes-per-caller", c.AnswerBytesPerCaller, "bytes of one caller's get and list answers in flight at once (their messages' and artifacts' parts); past it a read waits up to 1s, then gets the in-flight error; 0 for no cap")
	fs.Int64Var(&c.MaxTaskArtifactBytes, "max-task-artifact-bytes", c.MaxTaskArtifactBytes, "bytes one task's artifacts may take; a call whose output passes it fails its task, and the output is not stored; 0 for no limit")
	fs.IntVar(&c.MaxCallsPerCaller, "max-calls-per-caller", c.MaxCallsPerCaller, "calls one caller may have running or waiting (keys: max_calls); beyond it a call is refused with -32050, data.scope \"caller\"; 0 for no cap")
	fs.Int64Var(&c.RateBytes, "rate-bytes", c.RateBytes, "request body bytes (and get and list answer bytes) a second per caller once --rate-bytes-burst is spent (keys: rate_bytes; anonymous callers per IP); beyond it requests get 429 with -32052, data.scope \"bytes\"; 0 for no limit")
	fs.Int64Var(&c.RateBytesBurst, "rate-bytes-burst", c.RateBytesBurst, "request body bytes a caller may send at once before --rate-bytes applies; at least --max-body-bytes")
	fs.StringVar(&c.AuditLog, "audit-log", c.AuditLog, "where the audit trail goes: a file (reopened on SIGHUP), \"off\", or empty for the operational log")
	fs.StringVar(&c.PushAllow, "push-allow", c.PushAllow, "comma-separated CIDRs and host names webhooks may reach although they are not public (e.g. 127.0.0.1/32)")
	fs.DurationVar(&c.PushTimeout, "push-timeout", c.PushTimeout, "timeout of one push delivery attempt")
	fs.IntVar(&c.PushMaxAttempts, "push-max-attempts", c.PushMaxAttempts, "attempts before a push delivery goes to the dead letters")
	fs.IntVar(&c.PushConcurrency, "push-concurrency", c.PushConcurrency, "push deliveries in flight at once")
	fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, "PEM certificate (chain) to serve TLS with on every listener, reloaded on SIGHUP; TLS 1.2 at least; empty for plain HTTP")
	fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, "PEM private key of --tls-cert, reloaded with it")
	fs.StringVar(&c.TLSClientCA, "tls-client-ca", c.TLSClientCA, "PEM CAs whose client certificates are verified when sent (mutual TLS); a key's tls_subjects in --keys map one to a caller")
	fs.Var(cli.List{L: &c.CardSigningKeys}, "card-signing-key", "PEM private key (ECDSA P-256/384/521, RSA 2048+ or Ed25519) that signs the agent card, re-read on SIGHUP; repeat it (or separate files by commas) to sign with several keys during a rotation; the public keys are at /.well-known/a2ad-card-keys.json")
	c.A2A.flags(fs)
	fs.StringVar(&c.Format, "format", c.Format, "skills output: text or json")
	fs.StringVar(&c.Protocol, "protocol", c.Protocol, "skills view: a2a (skills on the agent card) or mcp (MCP tools)")
	fs.StringVar(&c.Caller, "caller", c.Caller, "skills view of this caller of --keys (its tiers, under --tier), without its secret")
}

// commandFlags are the flags of the commands that read only some
// settings; serve takes every flag but these commands' own.
var commandFlags = map[string][]string{
	"skills":   {"config", "catalog", "tier", "expose-all", "hidden-prefixes", "format", "protocol", "keys", "caller"},
	"validate": {"config", "catalog"},
	"call":     {"config", "catalog", "log-level", "log-format"},
}

// TakesFlag reports whether command takes the flag name on its command
// line. The environment and the config file may set any setting: one
// file serves every command.
func TakesFlag(command, name string) bool {
	if own, ok := commandFlags[command]; ok {
		return slices.Contains(own, name)
	}
	return name != "format" && name != "protocol" && name != "caller"
}

// Parse reads args, the environment and the config file into the Config
// of command name. It returns the remaining arguments. A command line the
// command's flags do not take is a *cli.FlagError; -h and --help print
// the flags to stderr (serve's by group) and return flag.ErrHelp.
func Parse(name string, args []string, lookupEnv func(string) (string, bool), stderr io.Writer) (Config, []string, error) {
	// First pass: find which flags are set, and the config file.
	probe := defaultsFor(name)
	all := flag.NewFlagSet("a2ad "+name, flag.ContinueOnError)
	probe.Flags(all)
	fs := flag.NewFlagSet("a2ad "+name, flag.ContinueOnError)
	all.VisitAll(func(f *flag.Flag) {
		if TakesFlag(name, f.Name) {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	if err := parseFlags(fs, args, stderr); err != nil {
		return Config{}, nil, err
	}
	cfg := defaultsFor(name)
	final := flag.NewFlagSet("a2ad "+name, flag.ContinueOnError)
	final.SetOutput(io.Discard)
	cfg.Flags(final)

	file := probe.ConfigFile
	if file == "" {
		file, _ = lookupEnv(cli.EnvName("config"))
	}
	if file != "" {
		if err := cli.ApplyFile(final, file); err != nil {
			return Config{}, nil, err
		}
	}
	var envErr error
	final.VisitAll(func(f *flag.Flag) {
		if v, ok := lookupEnv(cli.EnvName(f.Name)); ok && envErr == nil {
			if r, ok := f.Value.(cli.Resetter); ok {
				r.Reset() // the environment replaces the file's list
			}
			if err := final.Set(f.Name, v); err != nil {
				envErr = fmt.Errorf("environment %s=%q: %v", cli.EnvName(f.Name), v, err)
			}
		}
	})
	if envErr != nil {
		return Config{}, nil, envErr
	}
	fs.Visit(func(f *flag.Flag) {
		if r, ok := final.Lookup(f.Name).Value.(cli.Resetter); ok {
			r.Reset() // the command line replaces the list
		}
		_ = final.Set(f.Name, f.Value.String())
	})
	cfg.ConfigFile = file
	return cfg, fs.Args(), nil
}

// CORS is the policy of --cors-origins: nil when it is empty.
func (c *Config) CORS() (*httpx.CORS, error) {
	p, err := httpx.NewCORS(cli.SplitList(c.CORSOrigins))
	if err != nil {
		return nil, fmt.Errorf("cors-origins: %v", err)
	}
	return p, nil
}

func (c *Config) hiddenPrefixes() []string { return cli.SplitList(c.HiddenPrefixes) }

// Policy is the exposure policy the config sets: the one the card, the
// task service, the operator view and a2ad skills apply.
func (c *Config) Policy() exposure.Policy {
	return exposure.Policy{ExposeAll: c.ExposeAll, Tier: c.Tier, ExtraPrefixes: c.hiddenPrefixes()}
}

// PushAllowList is --push-allow's list.
func (c *Config) PushAllowList() []string { return cli.SplitList(c.PushAllow) }

// AnonymousTierList is --anonymous-tier's list.
func (c *Config) AnonymousTierList() []string { return cli.SplitList(c.AnonymousTiers) }

// CallerDefaults are the server's limits of a caller without its own
// (see callers.Effective.For, where a key's own replace them).
func (c *Config) CallerDefaults() callers.Effective {
	return callers.Effective{QuotaTasks: c.QuotaTasks, QuotaBytes: c.QuotaBytes, MaxHistory: c.MaxHistory,
		MaxCalls: c.MaxCallsPerCaller, RateBytes: c.RateBytes, IdemWindow: c.A2A.IdemWindow}
}
