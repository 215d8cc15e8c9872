package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2ad/a2ad/callers"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/catalogcmd"
	"github.com/a2ad/a2ad/cmd/a2ad/internal/config"
)

// shippedCatalog is the example catalogue, relative to this package.
const shippedCatalog = "../../examples/catalog.yaml"

// cfgEnv returns a lookupEnv that sees only m.
func cfgEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// tempFile writes content to name in a fresh temporary directory and
// returns its path.
func tempFile(tb testing.TB, name, content string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), name)
	putFile(tb, p, content)
	return p
}

// runA2AD runs the command line args with the environment env and returns
// the exit code and what was written to stdout and stderr.
func runA2AD(tb testing.TB, env map[string]string, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code = run(ctx, args, strings.NewReader(""), &out, &errOut, cfgEnv(env))
	return code, out.String(), errOut.String()
}

func TestRun_Version(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		code, out, _ := runA2AD(t, nil, arg)
		if code != 0 || strings.TrimSpace(out) != "a2ad dev" {
			t.Errorf("a2ad %s = %d, %q; want 0, %q", arg, code, out, "a2ad dev")
		}
	}
}

func TestRun_Usage(t *testing.T) {
	code, _, errOut := runA2AD(t, nil)
	if code != 2 || !strings.Contains(errOut, "Usage:") {
		t.Errorf("a2ad with no command = %d, stderr %q; want 2 and the usage", code, errOut)
	}
	code, out, _ := runA2AD(t, nil, "help")
	if code != 0 || !strings.Contains(out, "Usage:") {
		t.Errorf("a2ad help = %d, stdout %q; want 0 and the usage", code, out)
	}
}

func TestRun_UnknownCommand(t *testing.T) {
	code, out, errOut := runA2AD(t, nil, "bogus")
	if code != 2 {
		t.Errorf("a2ad bogus = %d, want 2", code)
	}
	if !strings.Contains(errOut, `unknown command "bogus"`) || out != "" {
		t.Errorf("a2ad bogus: stdout %q, stderr %q", out, errOut)
	}
}

// TestRun_UnknownCommands: a typo of a command or a subcommand gets a
// guess, then the usage; a word that is near nothing gets none.
func TestRun_UnknownCommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the first line
	}{
		{[]string{"serv"}, `a2ad: unknown command "serv" (did you mean "serve"?)`},
		{[]string{"skils"}, `a2ad: unknown command "skils" (did you mean "skills"?)`},
		{[]string{"bogus"}, `a2ad: unknown command "bogus"`},
		{[]string{"store", "bakup"}, `a2ad: unknown store tool "bakup" (did you mean "backup"?)`},
		{[]string{"keys", "creat"}, `a2ad keys: unknown command "creat" (did you mean "create"?)`},
		{[]string{"tasks", "lst"}, `a2ad: unknown tasks command "lst" (did you mean "list"?)`},
		{[]string{"push", "retyr"}, `a2ad: unknown push command "retyr" (did you mean "retry"?)`},
	} {
		code, out, errOut := runA2AD(t, nil, tc.args...)
		if first, _, _ := strings.Cut(errOut, "\n"); code != 2 || out != "" || first != tc.want || !strings.Contains(errOut, "Usage") {
			t.Errorf("a2ad %q = %d, stdout %q, stderr %q; want 2 and first line %q, then the usage", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestRun_BadFlags: a command line a command does not take is refused
// with one line first, a did-you-mean for a typo, and one line pointing
// at --help; not with every flag.
func TestRun_BadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the first line; the second points at --help
	}{
		{[]string{"serve", "--lisen", "127.0.0.1:0"}, "a2ad serve: unknown flag --lisen (did you mean --listen?)"},
		{[]string{"serve", "-admin-lsten", "127.0.0.1:0"}, "a2ad serve: unknown flag --admin-lsten (did you mean --admin-listen?)"},
		{[]string{"serve", "--format", "json"}, "a2ad serve: unknown flag --format"},
		{[]string{"serve", "--max-concurrent", "abc"}, `a2ad serve: invalid value "abc" for flag --max-concurrent: parse error`},
		{[]string{"serve", "--expose-all=maybe"}, `a2ad serve: invalid boolean value "maybe" for --expose-all: parse error`},
		{[]string{"skills", "--no-such-flag"}, "a2ad skills: unknown flag --no-such-flag"},
		{[]string{"skills", "--listen", "127.0.0.1:0"}, "a2ad skills: unknown flag --listen"},
		{[]string{"skills", "--fromat", "json"}, "a2ad skills: unknown flag --fromat (did you mean --format?)"},
		{[]string{"validate", "--max-concurrent", "abc"}, "a2ad validate: unknown flag --max-concurrent"},
		{[]string{"keys", "create", "--tiers", "partner"}, "a2ad keys create: unknown flag --tiers (did you mean --tier?)"},
		{[]string{"store", "backup", "--out"}, "a2ad store backup: flag needs an argument: --out"},
		{[]string{"tasks", "list", "--sate", "working"}, "a2ad tasks list: unknown flag --sate (did you mean --state?)"},
		{[]string{"push", "retry", "--al"}, "a2ad push retry: unknown flag --al (did you mean --all?)"},
		{[]string{"push", "list", "--server"}, "a2ad push list: flag needs an argument: --server"},
	} {
		code, out, errOut := runA2AD(t, nil, tc.args...)
		cmd := tc.want[:strings.Index(tc.want, ":")]
		want := tc.want + "\nRun \"" + cmd + " --help\" for the flags.\n"
		if code != 2 || out != "" || errOut != want {
			t.Errorf("a2ad %q = %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, want)
		}
	}
	if code, _, _ := runA2AD(t, map[string]string{"A2AD_MAX_CONCURRENT": "abc"}, "skills"); code != 2 {
		t.Errorf("a2ad skills with A2AD_MAX_CONCURRENT=abc = %d, want 2", code)
	}
}

// TestRun_Help: each command lists its own flags, and only them.
func TestRun_Help(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		has, not []string
	}{
		{[]string{"serve", "--help"}, []string{"-listen", "-admin-listen", "-catalog", "-tier", "-shutdown-grace"}, []string{"-format"}},
		{[]string{"skills", "-h"}, []string{"-catalog", "-config", "-expose-all", "-format", "-hidden-prefixes", "-tier"}, []string{"-listen", "-store"}},
		{[]string{"validate", "--help"}, []string{"-catalog", "-config"}, []string{"-tier", "-format", "-listen"}},
	} {
		code, _, errOut := runA2AD(t, nil, tc.args...)
		var flags []string
		for _, line := range strings.Split(errOut, "\n") {
			if f, ok := strings.CutPrefix(line, "  -"); ok {
				flags = append(flags, "-"+strings.Fields(f)[0])
			}
		}
		if code != 0 || !strings.HasPrefix(errOut, "Usage of a2ad "+tc.args[0]+":\n") {
			t.Errorf("a2ad %q = %d, %q; want 0 and the usage", tc.args, code, errOut)
		}
		for _, f := range tc.has {
			if !slices.Contains(flags, f) {
				t.Errorf("a2ad %q lacks %s: %v", tc.args, f, flags)
			}
		}
		for _, f := range tc.not {
			if slices.Contains(flags, f) {
				t.Errorf("a2ad %q lists %s, which it does not take", tc.args, f)
			}
		}
		if tc.args[0] == "validate" && len(flags) != 2 {
			t.Errorf("a2ad validate --help lists %v, want -catalog and -config", flags)
		}
	}
}

func TestValidate_Example(t *testing.T) {
	for _, args := range [][]string{
		{"validate", "--catalog", shippedCatalog},
		{"validate", shippedCatalog},
	} {
		code, out, errOut := runA2AD(t, nil, args...)
		if code != 0 || !strings.Contains(out, "ok") {
			t.Errorf("a2ad %q = %d, stdout %q, stderr %q; want 0 and ok", args, code, out, errOut)
		}
	}
	// The catalogue may come from the environment too.
	code, out, _ := runA2AD(t, map[string]string{"A2AD_CATALOG": shippedCatalog}, "validate")
	if code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("a2ad validate with A2AD_CATALOG = %d, %q; want 0 and ok", code, out)
	}
}

func TestValidate_NoCatalog(t *testing.T) {
	code, _, errOut := runA2AD(t, nil, "validate")
	if code != 2 || !strings.Contains(errOut, "give the catalogue file") {
		t.Errorf("a2ad validate = %d, stderr %q; want 2", code, errOut)
	}
}

func TestValidate_MissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.yaml")
	code, out, errOut := runA2AD(t, nil, "validate", path)
	if code != 1 || !strings.Contains(errOut, "cannot read catalogue") || strings.Contains(out, "ok") {
		t.Errorf("a2ad validate %s = %d, stdout %q, stderr %q; want 1", path, code, out, errOut)
	}
}

const brokenCatalog = `functions:
  - id: demo::a
    builtin: echo
  - id: demo::a
    builtin: echo
  - id: demo::b
    bogus: 1
    builtin: echo
  - id: demo::c
    description: no backend
  - id: demo::d
    timeout: -1s
    builtin: echo
`

// TestValidate_Broken checks that validate reports every problem, each on
// its own line as path:line:column: pointer (function): message.
func TestValidate_Broken(t *testing.T) {
	path := tempFile(t, "catalog.yaml", brokenCatalog)
	code, out, errOut := runA2AD(t, nil, "validate", "--catalog", path)
	if code != 1 {
		t.Errorf("a2ad validate of a broken catalogue = %d, want 1", code)
	}
	if strings.Contains(out, "ok") {
		t.Errorf("stdout = %q, want no ok", out)
	}
	want := []string{
		path + `:4:9: /functions/1/id (function "demo::a"): duplicate id "demo::a" (first defined at line 2)`,
		path + `:7:5: /functions/2/bogus (function "demo::b"): unknown key "bogus" in function; allowed: id, name, description, tags, examples, metadata, input_modes, output_modes, input_schema, output_schema, timeout, retry_safe, max_concurrency, output, reply, http, exec, builtin`,
		path + `:9:5: /functions/3 (function "demo::c"): exactly one of http, exec, builtin is required`,
		path + `:12:14: /functions/4/timeout (function "demo::d"): timeout must be positive, got "-1s"`,
		"a2ad: 4 problem(s) in " + path,
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("stderr lines (-want +got):\n%s", diff)
	}
}

// decision is what `a2ad skills` says about one function.
type decision struct {
	Backend string
	Exposed bool
	Reason  string
}

// exampleBackends are the example catalogue's functions and their
// backends; exampleOrder is their file order.
var exampleBackends = map[string]string{
	"demo::echo":      "builtin",
	"demo::sleep":     "builtin",
	"text::wordcount": "exec",
	"pricing::quote":  "http",
	"admin::reindex":  "builtin",
	"engine::status":  "builtin",
}

var exampleOrder = []string{"demo::echo", "demo::sleep", "text::wordcount", "pricing::quote", "admin::reindex", "engine::status"}

// skillsViews are the example catalogue's decisions for some views: for
// each function, its reason (exposed or why not).
var skillsViews = []struct {
	name    string
	args    []string
	env     map[string]string
	tier    string
	all     bool
	reasons map[string]string
}{
	{
		name: "tier partner", args: []string{"--tier", "partner"}, tier: "partner",
		reasons: map[string]string{
			"demo::echo": "exposed", "demo::sleep": "exposed", "text::wordcount": "exposed",
			"pricing::quote": "tier_mismatch", "admin::reindex": "not_opted_in", "engine::status": "hidden_prefix",
		},
	},
	{
		name: "tier partner from the environment", env: map[string]string{"A2AD_TIER": "partner"}, tier: "partner",
		reasons: map[string]string{
			"demo::echo": "exposed", "demo::sleep": "exposed", "text::wordcount": "exposed",
			"pricing::quote": "tier_mismatch", "admin::reindex": "not_opted_in", "engine::status": "hidden_prefix",
		},
	},
	{
		name: "tier internal", args: []string{"--tier", "internal"}, tier: "internal",
		reasons: map[string]string{
			"demo::echo": "tier_mismatch", "demo::sleep": "tier_mismatch", "text::wordcount": "tier_mismatch",
			"pricing::quote": "exposed", "admin::reindex": "not_opted_in", "engine::status": "hidden_prefix",
		},
	},
	{
		name: "no tier",
		reasons: map[string]string{
			"demo::echo": "exposed", "demo::sleep": "exposed", "text::wordcount": "exposed",
			"pricing::quote": "exposed", "admin::reindex": "not_opted_in", "engine::status": "hidden_prefix",
		},
	},
	{
		name: "expose-all, tier internal", args: []string{"--expose-all", "--tier", "internal"}, tier: "internal", all: true,
		reasons: map[string]string{
			"demo::echo": "tier_mismatch", "demo::sleep": "tier_mismatch", "text::wordcount": "tier_mismatch",
			"pricing::quote": "exposed", "admin::reindex": "exposed", "engine::status": "hidden_prefix",
		},
	},
	{
		name: "hidden prefix", args: []string{"--hidden-prefixes", "demo::,text::"},
		reasons: map[string]string{
			"demo::echo": "hidden_prefix", "demo::sleep": "hidden_prefix", "text::wordcount": "hidden_prefix",
			"pricing::quote": "exposed", "admin::reindex": "not_opted_in", "engine::status": "hidden_prefix",
		},
	},
}

func wantDecisions(reasons map[string]string) map[string]decision {
	out := map[string]decision{}
	for id, r := range reasons {
		out[id] = decision{Backend: exampleBackends[id], Exposed: r == "exposed", Reason: r}
	}
	return out
}

// parseSkillsTable reads the table of `a2ad skills`, after its header
// line, and returns the functions in order and their decisions.
func parseSkillsTable(tb testing.TB, out string) ([]string, map[string]decision) {
	tb.Helper()
	var order []string
	got := map[string]decision{}
	sc := bufio.NewScanner(strings.NewReader(out))
	inTable := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if !inTable {
			inTable = cmp.Equal(f, []string{"FUNCTION", "BACKEND", "EXPOSED", "REASON"})
			continue
		}
		if len(f) != 4 || (f[2] != "yes" && f[2] != "no") {
			tb.Fatalf("bad table line %q in\n%s", sc.Text(), out)
		}
		order = append(order, f[0])
		got[f[0]] = decision{Backend: f[1], Exposed: f[2] == "yes", Reason: f[3]}
	}
	if !inTable {
		tb.Fatalf("no table header in\n%s", out)
	}
	return order, got
}

func TestSkills_Text(t *testing.T) {
	for _, v := range skillsViews {
		t.Run(v.name, func(t *testing.T) {
			args := append([]string{"skills", "--catalog", shippedCatalog}, v.args...)
			code, out, errOut := runA2AD(t, v.env, args...)
			if code != 0 {
				t.Fatalf("a2ad %q = %d, stderr %q", args, code, errOut)
			}
			order, got := parseSkillsTable(t, out)
			if diff := cmp.Diff(exampleOrder, order); diff != "" {
				t.Errorf("functions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantDecisions(v.reasons), got); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSkills_Summary(t *testing.T) {
	code, out, _ := runA2AD(t, nil, "skills", "--catalog", shippedCatalog, "--tier", "partner")
	if code != 0 || !strings.Contains(out, "tier partner, expose-all false: 3 of 6 functions exposed") {
		t.Errorf("a2ad skills --tier partner = %d, stdout %q", code, out)
	}
	code, out, _ = runA2AD(t, nil, "skills", "--catalog", shippedCatalog)
	if code != 0 || !strings.Contains(out, "tier (none), expose-all false: 4 of 6 functions exposed") {
		t.Errorf("a2ad skills = %d, stdout %q", code, out)
	}
}

func TestSkills_JSON(t *testing.T) {
	for _, v := range skillsViews {
		t.Run(v.name, func(t *testing.T) {
			args := append([]string{"skills", "--catalog", shippedCatalog, "--format", "json"}, v.args...)
			code, out, errOut := runA2AD(t, v.env, args...)
			if code != 0 {
				t.Fatalf("a2ad %q = %d, stderr %q", args, code, errOut)
			}
			var doc struct {
				Tier      string `json:"tier"`
				ExposeAll bool   `json:"exposeAll"`
				Functions []struct {
					ID      string `json:"id"`
					Backend string `json:"backend"`
					Exposed bool   `json:"exposed"`
					Reason  string `json:"reason"`
				} `json:"functions"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			if doc.Tier != v.tier || doc.ExposeAll != v.all {
				t.Errorf("tier %q, exposeAll %v; want %q, %v", doc.Tier, doc.ExposeAll, v.tier, v.all)
			}
			var order []string
			got := map[string]decision{}
			for _, f := range doc.Functions {
				order = append(order, f.ID)
				got[f.ID] = decision{Backend: f.Backend, Exposed: f.Exposed, Reason: f.Reason}
			}
			if diff := cmp.Diff(exampleOrder, order); diff != "" {
				t.Errorf("functions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantDecisions(v.reasons), got); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSkills_Errors(t *testing.T) {
	code, _, errOut := runA2AD(t, nil, "skills")
	if code != 2 || !strings.Contains(errOut, "catalog: no catalogue file given") {
		t.Errorf("a2ad skills with no catalogue = %d, stderr %q; want 2", code, errOut)
	}
	path := tempFile(t, "catalog.yaml", brokenCatalog)
	code, out, errOut := runA2AD(t, nil, "skills", "--catalog", path)
	if code != 1 || !strings.Contains(errOut, `duplicate id "demo::a"`) || out != "" {
		t.Errorf("a2ad skills of a broken catalogue = %d, stdout %q, stderr %q; want 1", code, out, errOut)
	}
}

func TestServe_NoCatalog(t *testing.T) {
	store := filepath.Join(t.TempDir(), "a2ad.db")
	code, _, errOut := runA2AD(t, nil, "serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", store)
	if code != 2 || !strings.Contains(errOut, "catalog: no catalogue file given") {
		t.Errorf("a2ad serve with no catalogue = %d, stderr %q; want 2", code, errOut)
	}
}

func TestServe_InvalidConfig(t *testing.T) {
	code, _, errOut := runA2AD(t, nil, "serve", "--catalog", shippedCatalog, "--log-format", "xml", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errOut, "log-format") {
		t.Errorf("a2ad serve --log-format xml = %d, stderr %q; want 2", code, errOut)
	}
}

func TestServe_BadBaseURL(t *testing.T) {
	store := filepath.Join(t.TempDir(), "a2ad.db")
	code, _, errOut := runA2AD(t, nil, "serve", "--base-url", "ftp://x", "--catalog", shippedCatalog,
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", store)
	if code != 1 || !strings.Contains(errOut, "base-url") {
		t.Errorf("a2ad serve --base-url ftp://x = %d, stderr %q; want 1 and base-url", code, errOut)
	}
}

// TestServe_ListenOnAllAddresses: without --base-url, a bind-all --listen
// is refused before anything is bound, naming the address as typed and
// what to add.
func TestServe_ListenOnAllAddresses(t *testing.T) {
	store := filepath.Join(t.TempDir(), "a2ad.db")
	code, _, errOut := runA2AD(t, nil, "serve", "--catalog", shippedCatalog, "--listen", "0.0.0.0:8080", "--store", store)
	want := "a2ad: listen 0.0.0.0:8080: listening on all addresses needs --base-url, the URL clients reach a2ad at\n"
	if code != 2 || errOut != want {
		t.Errorf("a2ad serve --listen 0.0.0.0:8080 = %d, stderr %q; want 2, %q", code, errOut, want)
	}
	if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the store file was created: %v", err)
	}
}

// TestServe_AddressInUse: a taken --listen address (the README's first
// server holds 8080 while a newcomer starts another) says so and what to
// do, naming the address as given, and a2ad exits 1.
func TestServe_AddressInUse(t *testing.T) {
	taken := listenLoopback(t)
	store := filepath.Join(t.TempDir(), "a2ad.db")
	addr := taken.Addr().String()
	code, _, errOut := runA2AD(t, nil, "serve", "--catalog", shippedCatalog, "--listen", addr, "--admin-listen", "127.0.0.1:0", "--store", store)
	want := "a2ad: listen " + addr + ": the address is in use, by another a2ad or another program: stop it, or give --listen another address\n"
	if code != 1 || errOut != want {
		t.Errorf("a2ad serve --listen %s (taken) = %d, stderr %q; want 1, %q", addr, code, errOut, want)
	}
}

func TestServe_BrokenCatalog(t *testing.T) {
	path := tempFile(t, "catalog.yaml", brokenCatalog)
	store := filepath.Join(t.TempDir(), "a2ad.db")
	code, _, errOut := runA2AD(t, nil, "serve", "--catalog", path, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", store)
	if code != 1 || !strings.Contains(errOut, `timeout must be positive, got "-1s"`) {
		t.Errorf("a2ad serve of a broken catalogue = %d, stderr %q; want 1", code, errOut)
	}
}

// TestKeysCreateForce: a second create for a caller adds a second key
// (both work: a rotation); with --force the caller's entry is replaced (one
// entry, the new key alone).
func TestKeysCreateForce(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	create := []string{"keys", "create", "--keys", keys, "--id", "acme", "--tier", "partner"}
	code, first, _ := runA2AD(t, nil, create...)
	if code != 0 {
		t.Fatalf("keys create = %d", code)
	}
	code, second, errOut := runA2AD(t, nil, create...)
	if code != 0 || second == first || !strings.Contains(errOut, `added to caller "acme" the key `) {
		t.Errorf("keys create again = %d, %q; want 0 and a second key", code, errOut)
	}
	// --force for a caller not in the file creates it, and says so.
	code, _, errOut = runA2AD(t, nil, "keys", "create", "--keys", keys+".other", "--id", "bob", "--tier", "partner", "--force")
	if code != 0 || !strings.HasPrefix(errOut, `created caller "bob" with key `) {
		t.Errorf("keys create --force of a new caller = %d, %q; want 0 and created", code, errOut)
	}
	code, third, errOut := runA2AD(t, nil, append(create, "--force")...)
	if code != 0 || third == first || !strings.HasPrefix(third, "a2ad_") || !strings.Contains(errOut, `replaced the entry of caller "acme"`) {
		t.Errorf("keys create --force = %d, %q, %q; want 0 and a new secret", code, third, errOut)
	}
	ks, err := callers.LoadKeys(keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{first, second} {
		if _, ok := ks.Authenticate(strings.TrimSpace(s)); ok {
			t.Error("a key replaced by --force still authenticates")
		}
	}
	if _, ok := ks.Authenticate(strings.TrimSpace(third)); !ok || ks.Len() != 1 || len(ks.List()) != 1 {
		t.Errorf("after --force: %d entries, %d keys, new key valid: %v; want 1, 1, true", ks.Len(), len(ks.List()), ok)
	}
}

// TestSkills_MCPView pins `a2ad skills --protocol mcp`: each protocol reads
// its own opt-in and tier, --expose-all reaches A2A only, and the MCP view
// names each function's tool.
func TestSkills_MCPView(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(path, []byte(`functions:
  - id: pricing::quote
    builtin: echo
    metadata: {a2a.expose: true, a2a.tier: internal, mcp.expose: true, mcp.tier: partner}
  - id: demo::echo
    builtin: echo
    metadata: {a2a.expose: true, a2a.tier: partner}
  - id: tools::lookup
    builtin: echo
    metadata: {mcp.expose: true}
  - id: mcp::self
    builtin: echo
    metadata: {mcp.expose: true}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runA2AD(t, nil, "skills", "--catalog", path, "--tier", "partner", "--protocol", "mcp", "--expose-all")
	if code != 0 {
		t.Fatalf("a2ad skills --protocol mcp = %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var fields [][]string
	for _, l := range lines[2:] {
		fields = append(fields, strings.Fields(l))
	}
	want := [][]string{
		{"FUNCTION", "TOOL", "BACKEND", "EXPOSED", "REASON"},
		{"pricing::quote", "pricing.quote", "builtin", "yes", "exposed"},
		{"demo::echo", "demo.echo", "builtin", "no", "not_opted_in"},
		{"tools::lookup", "tools.lookup", "builtin", "no", "tier_mismatch"},
		{"mcp::self", "mcp.self", "builtin", "no", "hidden_prefix"},
	}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	if !strings.HasSuffix(lines[0], "tier partner, MCP: 1 of 4 functions exposed as tools") {
		t.Errorf("summary %q", lines[0])
	}
	// The A2A view of the same catalogue is unchanged by the MCP keys.
	_, out, _ = runA2AD(t, nil, "skills", "--catalog", path, "--tier", "partner")
	if _, got := parseSkillsTable(t, out); got["pricing::quote"].Reason != "tier_mismatch" || !got["demo::echo"].Exposed || got["tools::lookup"].Reason != "not_opted_in" {
		t.Errorf("A2A view: %v", got)
	}
	code, out, _ = runA2AD(t, nil, "skills", "--catalog", path, "--protocol", "mcp", "--format", "json")
	var doc struct {
		Protocol  string                 `json:"protocol"`
		Functions []catalogcmd.SkillView `json:"functions"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || doc.Protocol != "mcp" || len(doc.Functions) != 4 || doc.Functions[2] != (catalogcmd.SkillView{ID: "tools::lookup", Tool: "tools.lookup", Backend: "builtin", Exposed: true, Reason: "exposed"}) {
		t.Errorf("json view = %d, %v: %s", code, err, out)
	}
	code, _, errOut = runA2AD(t, nil, "skills", "--catalog", path, "--protocol", "smtp")
	if code != 2 || errOut != "a2ad: protocol: must be a2a or mcp, not \"smtp\"\n" {
		t.Errorf("bad protocol = %d, stderr %q", code, errOut)
	}
}

// TestSkills_TierChecks: a tier no function names is warned of (its
// callers would see nothing, silently), and a list is refused where one
// tier is meant.
func TestSkills_TierChecks(t *testing.T) {
	code, out, errOut := runA2AD(t, nil, "skills", "--catalog", shippedCatalog, "--tier", "Partner")
	want := "a2ad: warning: no function names tier \"Partner\" (--tier) in \"a2a.tier\": its callers see no skill (the catalogue names internal, partner)\n"
	if code != 0 || errOut != want || !strings.Contains(out, "0 of 6 functions exposed") {
		t.Errorf("a2ad skills --tier Partner = %d, stdout %q, stderr %q; want 0 and the warning %q", code, out, errOut, want)
	}
	if code, _, errOut = runA2AD(t, nil, "skills", "--catalog", shippedCatalog, "--tier", "partner"); code != 0 || errOut != "" {
		t.Errorf("a2ad skills --tier partner = %d, stderr %q; want no warning", code, errOut)
	}
	code, out, errOut = runA2AD(t, nil, "skills", "--catalog", shippedCatalog, "--tier", "internal,partner")
	want = "a2ad: tier: one tier name, not a list (\"internal,partner\"): the server-wide tier caps every caller; a caller of the keys file may have several\n"
	if code != 2 || out != "" || errOut != want {
		t.Errorf("a2ad skills --tier internal,partner = %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, want)
	}
}

// TestSkills_Caller: an operator sees what one caller of the keys file
// sees, by its id, without its secret; the server's --tier still caps it.
func TestSkills_Caller(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	mustAppendKey(t, keys, "acme", "partner")
	mustAppendKey(t, keys, "ops", "internal", "partner")
	for _, tc := range []struct {
		args    []string
		exposed []string
	}{
		{[]string{"--caller", "acme"}, []string{"demo::echo", "demo::sleep", "text::wordcount"}},
		{[]string{"--caller", "ops"}, []string{"demo::echo", "demo::sleep", "text::wordcount", "pricing::quote"}},
		{[]string{"--caller", "ops", "--tier", "internal"}, []string{"pricing::quote"}},
	} {
		args := append([]string{"skills", "--catalog", shippedCatalog, "--keys", keys}, tc.args...)
		code, out, errOut := runA2AD(t, nil, args...)
		if code != 0 || errOut != "" {
			t.Fatalf("a2ad %q = %d, stderr %q", args, code, errOut)
		}
		order, got := parseSkillsTable(t, out)
		var exposed []string
		for _, id := range order {
			if got[id].Exposed {
				exposed = append(exposed, id)
			}
		}
		if !slices.Equal(exposed, tc.exposed) || !strings.Contains(out, ", caller "+tc.args[1]) {
			t.Errorf("a2ad %q exposes %q, want %q; stdout %q", args, exposed, tc.exposed, out)
		}
	}
	code, _, errOut := runA2AD(t, nil, "skills", "--catalog", shippedCatalog, "--keys", keys, "--caller", "acm")
	if want := "a2ad: caller: no caller \"acm\" in the keys file " + keys + " (did you mean \"acme\"?)\n"; code != 2 || errOut != want {
		t.Errorf("an unknown caller = %d, %q; want 2 and %q", code, errOut, want)
	}
	code, _, errOut = runA2AD(t, nil, "skills", "--catalog", shippedCatalog, "--caller", "acme")
	if want := "a2ad: caller: --caller acme needs --keys, the keys file it is in\n"; code != 2 || errOut != want {
		t.Errorf("--caller without --keys = %d, %q; want 2 and %q", code, errOut, want)
	}
}

// TestAdminServerEnv: the admin commands' --server comes from
// A2AD_SERVER, as every flag's variable is named, before A2AD_ADMIN_URL,
// its older name, still read.
func TestAdminServerEnv(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "http://127.0.0.1:8081"},
		{map[string]string{"A2AD_ADMIN_URL": "http://old:1"}, "http://old:1"},
		{map[string]string{"A2AD_SERVER": "http://new:2", "A2AD_ADMIN_URL": "http://old:1"}, "http://new:2"},
		{map[string]string{"A2AD_SERVER": "", "A2AD_ADMIN_URL": "http://old:1"}, "http://old:1"},
	} {
		if got := config.AdminServer(env(tc.env)); got != tc.want {
			t.Errorf("config.AdminServer(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

// TestFlagGroups: every setting is in exactly one of serve --help's
// groups (a new flag must be placed), no group names a flag that does not
// exist, and serve --help lists them under their group's name.
func TestFlagGroups(t *testing.T) {
	fs := flag.NewFlagSet("a2ad", flag.ContinueOnError)
	cfg := config.Default()
	cfg.Flags(fs)
	in := map[string]string{}
	for _, g := range config.Groups {
		for _, name := range g.Flags {
			if other, dup := in[name]; dup {
				t.Errorf("--%s is in %q and %q", name, other, g.Name)
			}
			in[name] = g.Name
			if fs.Lookup(name) == nil {
				t.Errorf("group %q names --%s, which is no flag", g.Name, name)
			}
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if in[f.Name] == "" {
			t.Errorf("--%s is in no group of config.Groups", f.Name)
		}
	})
	_, _, errOut := runA2AD(t, nil, "serve", "--help")
	for _, want := range []string{"\nListeners:\n  -listen string\n", "\nCallers:\n  -keys string\n", "\nStore:\n  -store string\n", "\nTLS:\n  -tls-cert string\n"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
}

// TestAdminServerFromConfig: without A2AD_SERVER, the admin commands find
// the admin listener where a2ad serve opens it by the same settings: the
// shared config file's admin-listen (A2AD_CONFIG), or A2AD_ADMIN_LISTEN,
// which wins over the file as for serve; a file without it, or one that
// cannot be read, leaves the default.
func TestAdminServerFromConfig(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "a2ad.yaml")
	putFile(t, shared, "catalog: examples/catalog.yaml\nadmin-listen: 127.0.0.1:9181\n")
	plain := filepath.Join(dir, "plain.yaml")
	putFile(t, plain, "catalog: examples/catalog.yaml\n")
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"A2AD_CONFIG": shared}, "http://127.0.0.1:9181"},
		{map[string]string{"A2AD_CONFIG": shared, "A2AD_ADMIN_LISTEN": "127.0.0.1:9282"}, "http://127.0.0.1:9282"},
		{map[string]string{"A2AD_CONFIG": shared, "A2AD_SERVER": "http://new:2"}, "http://new:2"},
		{map[string]string{"A2AD_CONFIG": plain}, "http://127.0.0.1:8081"},
		{map[string]string{"A2AD_CONFIG": filepath.Join(dir, "missing.yaml")}, "http://127.0.0.1:8081"},
	} {
		if got := config.AdminServer(env(tc.env)); got != tc.want {
			t.Errorf("config.AdminServer(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}
