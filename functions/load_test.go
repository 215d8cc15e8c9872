package functions_test

// Over 600 lines: mostly the table of catalogue problems and the exact
// message each gets.

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a2ad/a2ad/functions"
	"github.com/google/go-cmp/cmp"
)

// MustWriteCatalog writes text to name in dir and returns its path.
func MustWriteCatalog(tb testing.TB, dir, name, text string) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// MapEnv is a LoadOptions.LookupEnv that reads env only.
func MapEnv(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

// LoadProblems loads path, which must fail, and returns its problems.
func LoadProblems(tb testing.TB, path string, opts functions.LoadOptions) []functions.Problem {
	tb.Helper()
	c, err := functions.Load(path, opts)
	if err == nil {
		tb.Fatalf("Load(%s) = %d functions, want an error", path, len(c.Functions))
	}
	var le *functions.LoadError
	if !errors.As(err, &le) {
		tb.Fatalf("Load error = %v (%T), want a *functions.LoadError", err, err)
	}
	if le.Path != path {
		tb.Errorf("LoadError.Path = %q, want %q", le.Path, path)
	}
	return le.Problems
}

// MustLoad loads path, which must succeed.
func MustLoad(tb testing.TB, path string, opts functions.LoadOptions) *functions.Catalog {
	tb.Helper()
	c, err := functions.Load(path, opts)
	if err != nil {
		tb.Fatalf("Load(%s): %v", path, err)
	}
	return c
}

func TestLoad_Problems(t *testing.T) {
	const functionKeys = "id, name, description, tags, examples, metadata, input_modes, output_modes, " +
		"input_schema, output_schema, timeout, retry_safe, max_concurrency, output, reply, http, exec, builtin"
	// {{dir}} in a message stands for the catalogue's directory.
	tests := []struct {
		name string
		yaml string
		env  map[string]string
		want functions.Problem
	}{
		// The file as a whole.
		{
			name: "not YAML",
			yaml: "functions:\n  - id: a\n    builtin: [echo\n",
			want: functions.Problem{Line: 3, Message: "not valid YAML: did not find expected ',' or ']'"},
		},
		{
			name: "empty",
			yaml: "# nothing here\n",
			want: functions.Problem{Message: "catalogue is empty; want a mapping with a functions list"},
		},
		{
			name: "top level not a mapping",
			yaml: "- id: a\n  builtin: echo\n",
			want: functions.Problem{Line: 1, Column: 1, Message: "the catalogue must be a mapping with a functions list, got a list"},
		},
		{
			name: "two documents",
			yaml: "functions: []\n---\nfunctions: []\n",
			want: functions.Problem{Line: 2, Column: 1, Message: "a catalogue must be a single YAML document; found another one"},
		},
		{
			name: "functions missing",
			yaml: "{}\n",
			want: functions.Problem{Line: 1, Column: 1, Message: "functions is required"},
		},
		{
			name: "functions not a list",
			yaml: "functions:\n  id: a\n",
			want: functions.Problem{Line: 2, Column: 3, Pointer: "/functions", Message: "functions must be a list, got a mapping"},
		},
		{
			name: "function not a mapping",
			yaml: "functions:\n  - demo::echo\n",
			want: functions.Problem{Line: 2, Column: 5, Pointer: "/functions/0", Message: "each function must be a mapping, got a string"},
		},

		// Unknown and duplicate keys.
		{
			name: "unknown top-level key",
			yaml: "functions: []\nfunction: []\n",
			want: functions.Problem{Line: 2, Column: 1, Pointer: "/function",
				Message: `unknown key "function" at top level (did you mean "functions"?); allowed: functions, default_skill`},
		},
		{
			name: "unknown function key",
			yaml: "functions:\n  - id: a::b\n    builtin: echo\n    timout: 5s\n",
			want: functions.Problem{Line: 4, Column: 5, Pointer: "/functions/0/timout", FunctionID: "a::b",
				Message: `unknown key "timout" in function (did you mean "timeout"?); allowed: ` + functionKeys},
		},
		{
			name: "unknown function key without suggestion",
			yaml: "functions:\n  - id: a::b\n    builtin: echo\n    owner: me\n",
			want: functions.Problem{Line: 4, Column: 5, Pointer: "/functions/0/owner", FunctionID: "a::b",
				Message: `unknown key "owner" in function; allowed: ` + functionKeys},
		},
		{
			name: "unknown http key",
			yaml: "functions:\n  - id: a::b\n    http:\n      url: https://example.com/\n      header: {}\n",
			want: functions.Problem{Line: 5, Column: 7, Pointer: "/functions/0/http/header", FunctionID: "a::b",
				Message: `unknown key "header" in http (did you mean "headers"?); allowed: url, method, headers, max_response_bytes`},
		},
		{
			name: "unknown exec key",
			yaml: "functions:\n  - id: a::b\n    exec:\n      argv: [date]\n      cwd: /\n",
			want: functions.Problem{Line: 5, Column: 7, Pointer: "/functions/0/exec/cwd", FunctionID: "a::b",
				Message: `unknown key "cwd" in exec; allowed: argv, dir, env, kill_grace, max_output_bytes, nice`},
		},
		{
			name: "duplicate key",
			yaml: "functions:\n  - id: a::b\n    timeout: 5s\n    builtin: echo\n    timeout: 6s\n",
			want: functions.Problem{Line: 5, Column: 5, Pointer: "/functions/0/timeout", FunctionID: "a::b",
				Message: `duplicate key "timeout" (first at line 3)`},
		},
		{
			name: "merge key",
			yaml: "functions:\n  - id: a::b\n    builtin: echo\n    <<: {timeout: 5s}\n",
			want: functions.Problem{Line: 4, Column: 5, Pointer: "/functions/0/<<", FunctionID: "a::b",
				Message: "merge keys (<<) are not supported"},
		},

		// Ids.
		{
			name: "id missing",
			yaml: "functions:\n  - builtin: echo\n",
			want: functions.Problem{Line: 2, Column: 5, Pointer: "/functions/0", Message: "id is required"},
		},
		{
			name: "id empty",
			yaml: "functions:\n  - id: \"\"\n    builtin: echo\n",
			want: functions.Problem{Line: 2, Column: 9, Pointer: "/functions/0/id", Message: "id must not be empty"},
		},
		{
			name: "id not a string",
			yaml: "functions:\n  - id: 42\n    builtin: echo\n",
			want: functions.Problem{Line: 2, Column: 9, Pointer: "/functions/0/id",
				Message: "id must be a string, got an integer; quote it to make it a string"},
		},
		{
			name: "id duplicate",
			yaml: "functions:\n  - id: a::b\n    builtin: echo\n  - id: a::b\n    builtin: echo\n",
			want: functions.Problem{Line: 4, Column: 9, Pointer: "/functions/1/id", FunctionID: "a::b",
				Message: `duplicate id "a::b" (first defined at line 2)`},
		},

		// Types of the common fields.
		{
			name: "name not a string",
			yaml: "functions:\n  - id: a::b\n    name: [x]\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 11, Pointer: "/functions/0/name", FunctionID: "a::b",
				Message: "name must be a string, got a list"},
		},
		{
			name: "tags not a list",
			yaml: "functions:\n  - id: a::b\n    tags: pricing\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 11, Pointer: "/functions/0/tags", FunctionID: "a::b",
				Message: "tags must be a list of strings, got a string"},
		},
		{
			name: "tag not a string",
			yaml: "functions:\n  - id: a::b\n    tags: [pricing, 2024]\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 21, Pointer: "/functions/0/tags/1", FunctionID: "a::b",
				Message: "tags[1] must be a string, got an integer; quote it to make it a string"},
		},
		{
			name: "examples item a mapping",
			yaml: "functions:\n  - id: a::b\n    examples:\n      - {text: hi}\n    builtin: echo\n",
			want: functions.Problem{Line: 4, Column: 9, Pointer: "/functions/0/examples/0", FunctionID: "a::b",
				Message: "examples[0] must be a string, got a mapping"},
		},
		{
			name: "metadata not a mapping",
			yaml: "functions:\n  - id: a::b\n    metadata: [a2a.expose]\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 15, Pointer: "/functions/0/metadata", FunctionID: "a::b",
				Message: "metadata must be a mapping, got a list"},
		},
		{
			name: "metadata infinite number",
			yaml: "functions:\n  - id: a::b\n    metadata: {a2a.weight: .inf}\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 28, Pointer: "/functions/0/metadata/a2a.weight", FunctionID: "a::b",
				Message: "numbers must be finite, got .inf"},
		},
		{
			name: "media type",
			yaml: "functions:\n  - id: a::b\n    input_modes: [json]\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 19, Pointer: "/functions/0/input_modes/0", FunctionID: "a::b",
				Message: `input_modes[0] is not a media type such as "application/json", got "json"`},
		},
		{
			name: "retry_safe not a bool",
			yaml: "functions:\n  - id: a::b\n    retry_safe: \"true\"\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 17, Pointer: "/functions/0/retry_safe", FunctionID: "a::b",
				Message: "retry_safe must be true or false, got a string"},
		},
		{
			name: "timeout not a string",
			yaml: "functions:\n  - id: a::b\n    timeout: 30\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 14, Pointer: "/functions/0/timeout", FunctionID: "a::b",
				Message: `timeout must be a duration string such as "30s", got an integer`},
		},
		{
			name: "timeout not a duration",
			yaml: "functions:\n  - id: a::b\n    timeout: 30 seconds\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 14, Pointer: "/functions/0/timeout", FunctionID: "a::b",
				Message: `timeout is not a valid duration such as "30s", got "30 seconds"`},
		},
		{
			name: "timeout negative",
			yaml: "functions:\n  - id: pricing::quote\n    timeout: -1s\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 14, Pointer: "/functions/0/timeout", FunctionID: "pricing::quote",
				Message: `timeout must be positive, got "-1s"`},
		},
		{
			name: "timeout zero",
			yaml: "functions:\n  - id: a::b\n    timeout: 0s\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 14, Pointer: "/functions/0/timeout", FunctionID: "a::b",
				Message: `timeout must be positive, got "0s"`},
		},
		{
			name: "max_concurrency negative",
			yaml: "functions:\n  - id: a::b\n    max_concurrency: -1\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 22, Pointer: "/functions/0/max_concurrency", FunctionID: "a::b",
				Message: "max_concurrency must not be negative, got -1"},
		},
		{
			name: "max_concurrency not an integer",
			yaml: "functions:\n  - id: a::b\n    max_concurrency: 2.5\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 22, Pointer: "/functions/0/max_concurrency", FunctionID: "a::b",
				Message: "max_concurrency must be an integer, got a number"},
		},

		// Schemas.
		{
			name: "inline schema does not compile",
			yaml: "functions:\n  - id: a::b\n    input_schema: {type: 5}\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 19, Pointer: "/functions/0/input_schema", FunctionID: "a::b",
				Message: `input_schema: schema does not compile: /type: value must be one of "array", "boolean", "integer", "null", "number", "object", "string"; /type: expected array, but got number`},
		},
		{
			name: "schema file missing",
			yaml: "functions:\n  - id: a::b\n    output_schema: schemas/missing.json\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 20, Pointer: "/functions/0/output_schema", FunctionID: "a::b",
				Message: `output_schema file "schemas/missing.json" cannot be read: no such file or directory`},
		},
		{
			name: "schema of the wrong type",
			yaml: "functions:\n  - id: a::b\n    input_schema: [object]\n    builtin: echo\n",
			want: functions.Problem{Line: 3, Column: 19, Pointer: "/functions/0/input_schema", FunctionID: "a::b",
				Message: "input_schema must be a mapping (an inline schema) or a string (a file path), got a list"},
		},

		// Backends.
		{
			name: "no backend",
			yaml: "functions:\n  - id: a::b\n    timeout: 5s\n",
			want: functions.Problem{Line: 2, Column: 5, Pointer: "/functions/0", FunctionID: "a::b",
				Message: "exactly one of http, exec, builtin is required"},
		},
		{
			name: "two backends",
			yaml: "functions:\n  - id: a::b\n    http: {url: \"https://example.com/\"}\n    exec: {argv: [date]}\n",
			want: functions.Problem{Line: 4, Column: 5, Pointer: "/functions/0/exec", FunctionID: "a::b",
				Message: "has both http and exec; exactly one backend is allowed"},
		},
		{
			name: "three backends",
			yaml: "functions:\n  - id: a::b\n    builtin: echo\n    exec: {argv: [date]}\n    http: {url: \"https://example.com/\"}\n",
			want: functions.Problem{Line: 5, Column: 5, Pointer: "/functions/0/http", FunctionID: "a::b",
				Message: "has builtin, exec and http; exactly one backend is allowed"},
		},
		{
			name: "http not a mapping",
			yaml: "functions:\n  - id: a::b\n    http: https://example.com/\n",
			want: functions.Problem{Line: 3, Column: 11, Pointer: "/functions/0/http", FunctionID: "a::b",
				Message: "http must be a mapping, got a string"},
		},
		{
			name: "http url missing",
			yaml: "functions:\n  - id: a::b\n    http:\n      method: POST\n",
			want: functions.Problem{Line: 4, Column: 7, Pointer: "/functions/0/http", FunctionID: "a::b",
				Message: "http.url is required"},
		},
		{
			name: "http url relative",
			yaml: "functions:\n  - id: a::b\n    http: {url: /quote}\n",
			want: functions.Problem{Line: 3, Column: 17, Pointer: "/functions/0/http/url", FunctionID: "a::b",
				Message: `http.url must be an absolute URL, got "/quote"`},
		},
		{
			name: "http url scheme",
			yaml: "functions:\n  - id: a::b\n    http: {url: \"ftp://example.com/x\"}\n",
			want: functions.Problem{Line: 3, Column: 17, Pointer: "/functions/0/http/url", FunctionID: "a::b",
				Message: `http.url must use the http or https scheme, got "ftp://example.com/x"`},
		},
		{
			name: "http url without host",
			yaml: "functions:\n  - id: a::b\n    http: {url: \"http:///x\"}\n",
			want: functions.Problem{Line: 3, Column: 17, Pointer: "/functions/0/http/url", FunctionID: "a::b",
				Message: `http.url must have a host, got "http:///x"`},
		},
		{
			name: "http method",
			yaml: "functions:\n  - id: a::b\n    http: {url: \"https://example.com/\", method: FETCH}\n",
			want: functions.Problem{Line: 3, Column: 49, Pointer: "/functions/0/http/method", FunctionID: "a::b",
				Message: `http.method must be one of GET, POST, PUT, PATCH, DELETE, got "FETCH"`},
		},
		{
			name: "http max_response_bytes",
			yaml: "functions:\n  - id: a::b\n    http:\n      url: https://example.com/\n      max_response_bytes: 0\n",
			want: functions.Problem{Line: 5, Column: 27, Pointer: "/functions/0/http/max_response_bytes", FunctionID: "a::b",
				Message: "http.max_response_bytes must be positive, got 0"},
		},
		{
			name: "http max_response_bytes over the limit",
			yaml: "functions:\n  - id: a::b\n    http:\n      url: https://example.com/\n      max_response_bytes: 4194305\n",
			want: functions.Problem{Line: 5, Column: 27, Pointer: "/functions/0/http/max_response_bytes", FunctionID: "a::b",
				Message: "http.max_response_bytes must be at most 4194304 (4 MiB), got 4194305"},
		},
		{
			name: "exec max_output_bytes over the limit",
			yaml: "functions:\n  - id: a::b\n    exec:\n      argv: [cat]\n      max_output_bytes: 100000000\n",
			want: functions.Problem{Line: 5, Column: 25, Pointer: "/functions/0/exec/max_output_bytes", FunctionID: "a::b",
				Message: "exec.max_output_bytes must be at most 4194304 (4 MiB), got 100000000"},
		},
		{
			name: "http header name",
			yaml: "functions:\n  - id: a::b\n    http:\n      url: https://example.com/\n      headers: {\"X Token\": abc}\n",
			want: functions.Problem{Line: 5, Column: 17, Pointer: "/functions/0/http/headers/X Token", FunctionID: "a::b",
				Message: `http.headers key "X Token" is not a valid header name`},
		},
		{
			name: "http header twice",
			yaml: "functions:\n  - id: a::b\n    http:\n      url: https://example.com/\n      headers:\n        X-Token: a\n        x-token: b\n",
			want: functions.Problem{Line: 7, Column: 9, Pointer: "/functions/0/http/headers/x-token", FunctionID: "a::b",
				Message: `duplicate header "x-token" (first at line 6; header names are case-insensitive)`},
		},
		{
			name: "exec argv missing",
			yaml: "functions:\n  - id: a::b\n    exec: {dir: .}\n",
			want: functions.Problem{Line: 3, Column: 11, Pointer: "/functions/0/exec", FunctionID: "a::b",
				Message: "exec.argv is required"},
		},
		{
			name: "exec argv empty",
			yaml: "functions:\n  - id: a::b\n    exec: {argv: []}\n",
			want: functions.Problem{Line: 3, Column: 18, Pointer: "/functions/0/exec/argv", FunctionID: "a::b",
				Message: "exec.argv must not be empty"},
		},
		{
			name: "exec argv a string",
			yaml: "functions:\n  - id: a::b\n    exec: {argv: ./bin/x.sh}\n",
			want: functions.Problem{Line: 3, Column: 18, Pointer: "/functions/0/exec/argv", FunctionID: "a::b",
				Message: "exec.argv must be a list of strings, got a string"},
		},
		{
			name: "exec program missing",
			yaml: "functions:\n  - id: a::b\n    exec: {argv: [./bin/missing.sh, -v]}\n",
			want: functions.Problem{Line: 3, Column: 19, Pointer: "/functions/0/exec/argv/0", FunctionID: "a::b",
				Message: `exec.argv[0] "./bin/missing.sh" does not exist (looked for {{dir}}/bin/missing.sh)`},
		},
		{
			name: "exec dir missing",
			yaml: "functions:\n  - id: a::b\n    exec: {argv: [date], dir: nowhere}\n",
			want: functions.Problem{Line: 3, Column: 31, Pointer: "/functions/0/exec/dir", FunctionID: "a::b",
				Message: `exec.dir "nowhere" does not exist`},
		},
		{
			name: "exec env key",
			yaml: "functions:\n  - id: a::b\n    exec:\n      argv: [date]\n      env: {1BAD: x}\n",
			want: functions.Problem{Line: 5, Column: 13, Pointer: "/functions/0/exec/env/1BAD", FunctionID: "a::b",
				Message: `exec.env key "1BAD" is not a valid variable name (letters, digits and _, not starting with a digit)`},
		},
		{
			name: "exec env value not a string",
			yaml: "functions:\n  - id: a::b\n    exec:\n      argv: [date]\n      env: {PORT: 8080}\n",
			want: functions.Problem{Line: 5, Column: 19, Pointer: "/functions/0/exec/env/PORT", FunctionID: "a::b",
				Message: "exec.env.PORT must be a string, got an integer; quote it to make it a string"},
		},
		{
			name: "exec nice",
			yaml: "functions:\n  - id: a::b\n    exec: {argv: [date], nice: 20}\n",
			want: functions.Problem{Line: 3, Column: 32, Pointer: "/functions/0/exec/nice", FunctionID: "a::b",
				Message: `exec.nice must be from 0 to 19, got 20`},
		},
		{
			name: "exec kill_grace",
			yaml: "functions:\n  - id: a::b\n    exec: {argv: [date], kill_grace: 5}\n",
			want: functions.Problem{Line: 3, Column: 38, Pointer: "/functions/0/exec/kill_grace", FunctionID: "a::b",
				Message: `exec.kill_grace must be a duration string such as "30s", got an integer`},
		},
		{
			name: "builtin unknown",
			yaml: "functions:\n  - id: a::b\n    builtin: ecko\n",
			want: functions.Problem{Line: 3, Column: 14, Pointer: "/functions/0/builtin", FunctionID: "a::b",
				Message: `unknown builtin "ecko"; known: ` + strings.Join(functions.BuiltinNames(), ", ")},
		},
		{
			name: "builtin not a string",
			yaml: "functions:\n  - id: a::b\n    builtin: {name: echo}\n",
			want: functions.Problem{Line: 3, Column: 14, Pointer: "/functions/0/builtin", FunctionID: "a::b",
				Message: "builtin must be a string, got a mapping"},
		},

		// Environment variables.
		{
			name: "unset variable in url",
			yaml: "functions:\n  - id: a::b\n    http: {url: \"${QUOTE_URL}/quote\"}\n",
			want: functions.Problem{Line: 3, Column: 17, Pointer: "/functions/0/http/url", FunctionID: "a::b",
				Message: "http.url references ${QUOTE_URL}, which is not set"},
		},
		{
			name: "unset variable in header",
			yaml: "functions:\n  - id: a::b\n    http:\n      url: https://example.com/\n      headers:\n        Authorization: Bearer ${QUOTE_TOKEN}\n",
			want: functions.Problem{Line: 6, Column: 24, Pointer: "/functions/0/http/headers/Authorization", FunctionID: "a::b",
				Message: "http.headers.Authorization references ${QUOTE_TOKEN}, which is not set"},
		},
		{
			name: "unset variable in env",
			yaml: "functions:\n  - id: a::b\n    exec:\n      argv: [date]\n      env: {KEY: \"${API_KEY}\"}\n",
			want: functions.Problem{Line: 5, Column: 18, Pointer: "/functions/0/exec/env/KEY", FunctionID: "a::b",
				Message: "exec.env.KEY references ${API_KEY}, which is not set"},
		},
		{
			name: "unterminated reference",
			yaml: "functions:\n  - id: a::b\n    exec:\n      argv: [date]\n      env: {KEY: \"${API_KEY\"}\n",
			want: functions.Problem{Line: 5, Column: 18, Pointer: "/functions/0/exec/env/KEY", FunctionID: "a::b",
				Message: "exec.env.KEY has a ${ without a closing }; write $${ for a literal ${"},
		},
		{
			name: "invalid reference",
			yaml: "functions:\n  - id: a::b\n    exec:\n      argv: [date]\n      env: {KEY: \"${API-KEY}\"}\n",
			want: functions.Problem{Line: 5, Column: 18, Pointer: "/functions/0/exec/env/KEY", FunctionID: "a::b",
				Message: "exec.env.KEY has an invalid variable reference; want ${NAME} or ${NAME:-default} " +
					"where NAME is letters, digits and _ and does not start with a digit"},
		},
		{
			name: "empty variable with a default is fine but unset without one is not",
			yaml: "functions:\n  - id: a::b\n    exec:\n      argv: [date]\n      env: {A: \"${EMPTY:-x}\", B: \"${UNSET}\"}\n",
			env:  map[string]string{"EMPTY": ""},
			want: functions.Problem{Line: 5, Column: 34, Pointer: "/functions/0/exec/env/B", FunctionID: "a::b",
				Message: "exec.env.B references ${UNSET}, which is not set"},
		},
		// MCP tool names: only functions opted into MCP are checked.
		{
			name: "MCP tool names collide",
			yaml: "functions:\n  - id: pricing::quote\n    builtin: echo\n    metadata: {mcp.expose: true}\n" +
				"  - id: pricing.quote\n    builtin: echo\n    metadata: {mcp.expose: true}\n" +
				"  - id: pricing:quote\n    builtin: echo\n",
			want: functions.Problem{Line: 5, Column: 9, Pointer: "/functions/1/id", FunctionID: "pricing.quote",
				Message: `MCP tool name "pricing.quote" is also the name of "pricing::quote": ids that differ only in characters MCP does not allow in a tool name collide; rename one (line 2)`},
		},
		{
			name: "MCP tool name too long",
			yaml: "functions:\n  - id: " + strings.Repeat("n", 129) + "\n    builtin: echo\n    metadata: {mcp.expose: true}\n" +
				"  - id: " + strings.Repeat("m", 129) + "\n    builtin: echo\n    metadata: {a2a.expose: true}\n",
			want: functions.Problem{Line: 2, Column: 9, Pointer: "/functions/0/id", FunctionID: strings.Repeat("n", 129),
				Message: `MCP tool name "` + strings.Repeat("n", 129) + `" is 129 bytes, over MCP's 128`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := MustWriteCatalog(t, dir, "catalog.yaml", tt.yaml)
			got := LoadProblems(t, path, functions.LoadOptions{LookupEnv: MapEnv(tt.env)})
			want := tt.want
			want.Message = strings.ReplaceAll(want.Message, "{{dir}}", dir)
			if diff := cmp.Diff([]functions.Problem{want}, got); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoad_Unreadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.yaml")
	got := LoadProblems(t, path, functions.LoadOptions{})
	want := []functions.Problem{{Message: "cannot read catalogue: no such file or directory"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems = %+v, want %+v", got, want)
	}
}

// TestLoad_AllProblems checks that Load keeps going after a problem and
// reports each one, in file order.
func TestLoad_AllProblems(t *testing.T) {
	const text = `functions:
  - id: one::a
    timeout: -1s
    builtin: ecko
  - name: no id
    builtin: echo
  - id: one::a
    http: {url: /relative}
  - id: two::b
    exec: {argv: []}
    retry_safe: maybe
extra: true
`
	path := MustWriteCatalog(t, t.TempDir(), "catalog.yaml", text)
	got := LoadProblems(t, path, functions.LoadOptions{LookupEnv: MapEnv(nil)})
	want := []functions.Problem{
		{Line: 3, Column: 14, Pointer: "/functions/0/timeout", FunctionID: "one::a", Message: `timeout must be positive, got "-1s"`},
		{Line: 4, Column: 14, Pointer: "/functions/0/builtin", FunctionID: "one::a",
			Message: `unknown builtin "ecko"; known: ` + strings.Join(functions.BuiltinNames(), ", ")},
		{Line: 5, Column: 5, Pointer: "/functions/1", Message: "id is required"},
		{Line: 7, Column: 9, Pointer: "/functions/2/id", FunctionID: "one::a", Message: `duplicate id "one::a" (first defined at line 2)`},
		{Line: 8, Column: 17, Pointer: "/functions/2/http/url", FunctionID: "one::a", Message: `http.url must be an absolute URL, got "/relative"`},
		{Line: 10, Column: 18, Pointer: "/functions/3/exec/argv", FunctionID: "two::b", Message: "exec.argv must not be empty"},
		{Line: 11, Column: 17, Pointer: "/functions/3/retry_safe", FunctionID: "two::b", Message: "retry_safe must be true or false, got a string"},
		{Line: 12, Column: 1, Pointer: "/extra", Message: `unknown key "extra" at top level; allowed: functions, default_skill`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadError_Error(t *testing.T) {
	e := &functions.LoadError{Path: "examples/catalog.yaml", Problems: []functions.Problem{
		{Line: 12, Column: 5, Pointer: "/functions/2/timeout", FunctionID: "pricing::quote", Message: `timeout must be positive, got "-1s"`},
		{Line: 3, Column: 1, Pointer: "/functions/0", Message: "id is required"},
		{Message: "cannot read catalogue: permission denied"},
	}}
	want := `examples/catalog.yaml:12:5: /functions/2/timeout (function "pricing::quote"): timeout must be positive, got "-1s"
examples/catalog.yaml:3:1: /functions/0: id is required
examples/catalog.yaml:cannot read catalogue: permission denied`
	if got := e.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
}

func TestLoad_Good(t *testing.T) {
	dir := t.TempDir()
	MustWriteCatalog(t, dir, "schemas/out.json", `{"type": "object", "required": ["total"]}`)
	script := MustWriteCatalog(t, dir, "bin/run.sh", "#!/bin/sh\ncat\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	MustWriteCatalog(t, dir, "work/.keep", "")
	path := MustWriteCatalog(t, dir, "catalog.yaml", `# Every field, and every backend.
functions:
  - id: pricing::quote
    name: Price quote
    description: |
      Prices an order.
    tags: [pricing, quote]
    examples: ['{"sku": "A"}']
    metadata:
      "a2a.expose": true
      "a2a.tier": partner
      "a2a.flag": "true"
      count: 3
      ratio: 0.5
      nothing: null
      list: [1, two]
      nested: {a: {b: false}}
    input_modes: [application/json, text/plain]
    output_modes: [application/json]
    input_schema:
      type: object
      properties:
        sku: {type: string}
      required: [sku]
    output_schema: schemas/out.json
    timeout: 1m30s
    retry_safe: true
    max_concurrency: 4
    http:
      url: "${QUOTE_URL}/quote"
      method: put
      headers:
        Authorization: "Bearer ${QUOTE_TOKEN}"
        X-Region: "${REGION:-eu}"
        X-Literal: "$${NOT_A_VAR}"
      max_response_bytes: 1024
  - id: text::count
    exec:
      argv: [./bin/run.sh, --flag, "${KEEP_LITERAL}"]
      dir: work
      env: {API_KEY: "${API_KEY}", MODE: fast}
      kill_grace: 2s
      max_output_bytes: 4194304 # the limit
  - id: demo::echo
    builtin: echo
`)
	env := map[string]string{
		"QUOTE_URL":   "https://quotes.example.com",
		"QUOTE_TOKEN": "s3cret",
		"API_KEY":     "k3y",
	}
	c := MustLoad(t, path, functions.LoadOptions{LookupEnv: MapEnv(env)})

	if c.Path != path {
		t.Errorf("Path = %q, want %q", c.Path, path)
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(c.Version) {
		t.Errorf("Version = %q, want 16 hex digits", c.Version)
	}
	if len(c.Functions) != 3 {
		t.Fatalf("len(Functions) = %d, want 3", len(c.Functions))
	}
	for _, f := range c.Functions {
		if got, ok := c.Lookup(f.ID); !ok || got != f {
			t.Errorf("Lookup(%q) = %v, %v; want the function", f.ID, got, ok)
		}
	}

	q := c.Functions[0]
	if q.ID != "pricing::quote" || q.Name != "Price quote" || q.Description != "Prices an order." {
		t.Errorf("ID, Name, Description = %q, %q, %q", q.ID, q.Name, q.Description)
	}
	if want := []string{"pricing", "quote"}; !reflect.DeepEqual(q.Tags, want) {
		t.Errorf("Tags = %q, want %q", q.Tags, want)
	}
	if want := []string{`{"sku": "A"}`}; !reflect.DeepEqual(q.Examples, want) {
		t.Errorf("Examples = %q, want %q", q.Examples, want)
	}
	wantMeta := map[string]any{
		"a2a.expose": true,
		"a2a.tier":   "partner",
		"a2a.flag":   "true",
		"count":      3,
		"ratio":      0.5,
		"nothing":    nil,
		"list":       []any{1, "two"},
		"nested":     map[string]any{"a": map[string]any{"b": false}},
	}
	if diff := cmp.Diff(wantMeta, q.Metadata); diff != "" {
		t.Errorf("Metadata mismatch (-want +got):\n%s", diff)
	}
	if want := []string{"application/json", "text/plain"}; !reflect.DeepEqual(q.InputModes, want) {
		t.Errorf("InputModes = %q, want %q", q.InputModes, want)
	}
	if want := []string{"application/json"}; !reflect.DeepEqual(q.OutputModes, want) {
		t.Errorf("OutputModes = %q, want %q", q.OutputModes, want)
	}
	if got, want := string(q.Input.JSON()), `{"properties":{"sku":{"type":"string"}},"required":["sku"],"type":"object"}`; got != want {
		t.Errorf("Input = %s, want %s", got, want)
	}
	if ps := q.Input.Validate([]byte(`{}`)); len(ps) == 0 {
		t.Errorf("Input.Validate({}) = no problems, want sku missing")
	}
	if q.Output == nil {
		t.Fatal("Output = nil, want the file schema")
	}
	if got, want := string(q.Output.JSON()), `{"type":"object","required":["total"]}`; got != want {
		t.Errorf("Output = %s, want %s", got, want)
	}
	if q.Timeout != 90*time.Second || !q.RetrySafe || q.MaxConcurrency != 4 {
		t.Errorf("Timeout, RetrySafe, MaxConcurrency = %v, %v, %v; want 1m30s, true, 4", q.Timeout, q.RetrySafe, q.MaxConcurrency)
	}
	hb, ok := q.Backend.(*functions.HTTPBackend)
	if !ok {
		t.Fatalf("Backend = %T, want *functions.HTTPBackend", q.Backend)
	}
	wantHTTP := &functions.HTTPBackend{
		URL:    "https://quotes.example.com/quote",
		Method: "PUT",
		Headers: map[string]string{
			"Authorization": "Bearer s3cret",
			"X-Region":      "eu",
			"X-Literal":     "${NOT_A_VAR}",
		},
		MaxResponseBytes: 1024,
	}
	if !reflect.DeepEqual(hb, wantHTTP) {
		t.Errorf("HTTPBackend = %+v, want %+v", hb, wantHTTP)
	}

	x := c.Functions[1]
	if x.Name != "text count" || x.Description != "text count" {
		t.Errorf("default Name, Description = %q, %q; want %q twice", x.Name, x.Description, "text count")
	}
	if x.Tags != nil || x.Metadata != nil || x.Output != nil || x.RetrySafe || x.MaxConcurrency != 0 {
		t.Errorf("optional fields set: %+v", x)
	}
	if x.Timeout != functions.DefaultTimeout {
		t.Errorf("default Timeout = %v, want %v", x.Timeout, functions.DefaultTimeout)
	}
	if x.Input == nil || string(x.Input.JSON()) != `{"type":"object"}` {
		t.Errorf("default Input = %v, want {\"type\":\"object\"}", x.Input)
	}
	eb, ok := x.Backend.(*functions.ExecBackend)
	if !ok {
		t.Fatalf("Backend = %T, want *functions.ExecBackend", x.Backend)
	}
	wantExec := &functions.ExecBackend{
		Argv:           []string{script, "--flag", "${KEEP_LITERAL}"}, // argv is not expanded
		Dir:            filepath.Join(dir, "work"),
		Env:            []string{"API_KEY=k3y", "MODE=fast"},
		KillGrace:      2 * time.Second,
		MaxOutputBytes: 4194304,
		Nice:           functions.DefaultNice, // the default when the entry sets none
	}
	if !reflect.DeepEqual(eb, wantExec) {
		t.Errorf("ExecBackend = %+v, want %+v", eb, wantExec)
	}
	if !filepath.IsAbs(eb.Argv[0]) {
		t.Errorf("Argv[0] = %q, want an absolute path", eb.Argv[0])
	}

	e := c.Functions[2]
	if bb, ok := e.Backend.(*functions.BuiltinBackend); !ok || bb.Name != "echo" || bb.Kind() != "builtin" {
		t.Errorf("Backend = %#v, want builtin echo", e.Backend)
	}
}

// TestLoad_RelativePath checks that relative paths in a catalogue are
// taken from its directory, not from the working directory.
func TestLoad_RelativePath(t *testing.T) {
	dir := t.TempDir()
	script := MustWriteCatalog(t, dir, "sub/bin/x.sh", "#!/bin/sh\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	MustWriteCatalog(t, dir, "sub/in.json", `{"type": "object"}`)
	MustWriteCatalog(t, dir, "sub/catalog.yaml", `functions:
  - id: a::b
    input_schema: in.json
    exec: {argv: [bin/x.sh]}
`)
	t.Chdir(dir)
	c := MustLoad(t, filepath.Join("sub", "catalog.yaml"), functions.LoadOptions{})
	eb := c.Functions[0].Backend.(*functions.ExecBackend)
	if eb.Argv[0] != script || eb.Dir != filepath.Join(dir, "sub") {
		t.Errorf("Argv[0], Dir = %q, %q; want %q, %q", eb.Argv[0], eb.Dir, script, filepath.Join(dir, "sub"))
	}
}

// TestLoad_Version checks that the version follows the catalogue and the
// schema files it references.
func TestLoad_Version(t *testing.T) {
	dir := t.TempDir()
	MustWriteCatalog(t, dir, "in.json", `{"type": "object"}`)
	path := MustWriteCatalog(t, dir, "catalog.yaml", "functions:\n  - id: a::b\n    input_schema: in.json\n    builtin: echo\n")
	v1 := MustLoad(t, path, functions.LoadOptions{}).Version
	if v := MustLoad(t, path, functions.LoadOptions{}).Version; v != v1 {
		t.Errorf("Version changed without a change: %s, then %s", v1, v)
	}
	MustWriteCatalog(t, dir, "in.json", `{"type": "object", "required": ["x"]}`)
	v2 := MustLoad(t, path, functions.LoadOptions{}).Version
	if v2 == v1 {
		t.Errorf("Version = %s after the schema file changed, want a new one", v2)
	}
}

// TestLoad_JSON checks that a catalogue written as JSON loads too.
func TestLoad_JSON(t *testing.T) {
	path := MustWriteCatalog(t, t.TempDir(), "catalog.json", "{\n\t\"functions\": [\n\t\t{\"id\": \"a::b\", \"builtin\": \"echo\",\n"+
		"\t\t \"metadata\": {\"a2a.expose\": true, \"a2a.tier\": \"partner\"}, \"timeout\": \"-1s\"}\n\t]\n}\n")
	got := LoadProblems(t, path, functions.LoadOptions{})
	want := []functions.Problem{{Line: 4, Column: 72, Pointer: "/functions/0/timeout", FunctionID: "a::b",
		Message: `timeout must be positive, got "-1s"`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

// TestLoad_SecretsNotPrinted checks that no message holds the value of a
// header or of an environment variable.
func TestLoad_SecretsNotPrinted(t *testing.T) {
	const text = `functions:
  - id: a::b
    http:
      url: "https://example.com/${PATH_SECRET}"
      headers:
        Authorization: "Bearer literal-secret-1"
        X-Api-Key: "${API_KEY}"
        X-Missing: "Bearer literal-secret-2 ${MISSING}"
        X-Broken: "${BROKEN_VALUE}"
        X-Type: 12345
  - id: c::d
    exec:
      argv: [date]
      env: {A: "${API_KEY}", B: "literal-secret-3 ${MISSING}", C: "${BROKEN_VALUE}", "literal-secret-4": x}
`
	env := map[string]string{
		"PATH_SECRET":  "env-secret-0",
		"API_KEY":      "env-secret-1",
		"BROKEN_VALUE": "env-secret-2\r\nX-Injected: 1",
	}
	path := MustWriteCatalog(t, t.TempDir(), "catalog.yaml", text)
	_, err := functions.Load(path, functions.LoadOptions{LookupEnv: MapEnv(env)})
	if err == nil {
		t.Fatal("Load succeeded, want problems")
	}
	msg := err.Error()
	for _, secret := range []string{"literal-secret-1", "literal-secret-2", "literal-secret-3", "env-secret", "12345"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error holds %q:\n%s", secret, msg)
		}
	}
	for _, want := range []string{
		"http.headers.X-Missing references ${MISSING}, which is not set",
		"http.headers.X-Broken must not contain line breaks or NUL characters",
		"http.headers.X-Type must be a string, got an integer; quote it to make it a string",
		"exec.env.B references ${MISSING}, which is not set",
		// A key is not a value: naming the bad key is fine.
		`exec.env key "literal-secret-4" is not a valid variable name`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}

// TestLoad_Aliases checks that YAML anchors and aliases work, and that a
// self-referencing alias is an error rather than a hang.
func TestLoad_Aliases(t *testing.T) {
	dir := t.TempDir()
	good := MustWriteCatalog(t, dir, "good.yaml", `functions:
  - id: a::one
    metadata: &meta {"a2a.expose": true, "a2a.tier": partner}
    input_schema: &schema {type: object, required: [x]}
    builtin: echo
  - id: a::two
    metadata: *meta
    input_schema: *schema
    builtin: echo
`)
	c := MustLoad(t, good, functions.LoadOptions{})
	if !reflect.DeepEqual(c.Functions[0].Metadata, c.Functions[1].Metadata) {
		t.Errorf("Metadata differ: %v, %v", c.Functions[0].Metadata, c.Functions[1].Metadata)
	}

	loop := MustWriteCatalog(t, dir, "loop.yaml", `functions:
  - id: a::b
    metadata: {x: &x [*x]}
    builtin: echo
`)
	ps := LoadProblems(t, loop, functions.LoadOptions{})
	if len(ps) != 1 || !strings.HasPrefix(ps[0].Message, "value is nested more than") {
		t.Errorf("problems = %+v, want one about nesting", ps)
	}
}

// TestLoad_Example checks that the shipped example catalogue loads with no
// problem and says what its comments say.
func TestLoad_Example(t *testing.T) {
	const path = "../examples/catalog.yaml"
	c := MustLoad(t, path, functions.LoadOptions{LookupEnv: MapEnv(nil)})

	type summary struct {
		Kind   string
		Expose any
		Tier   any
	}
	got := map[string]summary{}
	for _, f := range c.Functions {
		got[f.ID] = summary{f.Backend.Kind(), f.Metadata["a2a.expose"], f.Metadata["a2a.tier"]}
	}
	want := map[string]summary{
		"demo::echo":      {"builtin", true, "partner"},
		"demo::sleep":     {"builtin", true, "partner"},
		"text::wordcount": {"exec", true, "partner"},
		"pricing::quote":  {"http", true, "internal"},
		"admin::reindex":  {"builtin", "true", "internal"},
		"engine::status":  {"builtin", true, nil},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("functions = %+v\nwant %+v", got, want)
	}

	q, _ := c.Lookup("pricing::quote")
	if h := q.Backend.(*functions.HTTPBackend).Headers["Authorization"]; h != "Bearer demo-token" {
		t.Errorf("Authorization with QUOTE_TOKEN unset is not the default")
	}
	if q.Output == nil {
		t.Errorf("pricing::quote has no output schema")
	}
	for _, tt := range []struct {
		input string
		ok    bool
	}{
		{`{"sku": "A", "quantity": 1}`, true},
		{`{"sku": "A", "quantity": 1, "approved": true}`, true},
		{`{"sku": "A", "quantity": 0}`, false},
		{`{"sku": "A"}`, false},
	} {
		if ps := q.Input.Validate([]byte(tt.input)); (len(ps) == 0) != tt.ok {
			t.Errorf("pricing::quote Input.Validate(%s) = %v, want ok %v", tt.input, ps, tt.ok)
		}
	}
	c2 := MustLoad(t, path, functions.LoadOptions{LookupEnv: MapEnv(map[string]string{"QUOTE_TOKEN": "t0k"})})
	q2, _ := c2.Lookup("pricing::quote")
	if h := q2.Backend.(*functions.HTTPBackend).Headers["Authorization"]; h != "Bearer t0k" {
		t.Errorf("Authorization does not use QUOTE_TOKEN")
	}

	w, _ := c.Lookup("text::wordcount")
	argv := w.Backend.(*functions.ExecBackend).Argv
	if !filepath.IsAbs(argv[0]) || filepath.Base(argv[0]) != "wordcount.sh" {
		t.Errorf("wordcount Argv = %q, want an absolute path to wordcount.sh", argv)
	}
}

// TestExampleWordcount runs the example exec backend script directly.
func TestExampleWordcount(t *testing.T) {
	if _, err := exec.LookPath("awk"); err != nil {
		t.Skip("no awk")
	}
	script, err := filepath.Abs("../examples/bin/wordcount.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ input, want string }{
		{`{"text": "the quick brown fox"}`, `{"words":4,"characters":19}`},
		{`{"text": "  héllo\n\twörld  "}`, `{"words":2,"characters":16}`},
		{`{"lang": "en", "meta": {"text": 1}, "text": "say \"hi\" \u00e9 \ud83d\ude00"}`, `{"words":4,"characters":12}`},
		{`{"text": ""}`, `{"words":0,"characters":0}`},
		{`{"other": "x"}`, `{"a2a.error":"text is required"}`},
		{`{"text": 5}`, `{"a2a.error":"text must be a string"}`},
		{`[1]`, `{"a2a.error":"input must be a JSON object"}`},
	} {
		cmd := exec.Command(script)
		cmd.Stdin = strings.NewReader(tt.input)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("run wordcount.sh < %s: %v", tt.input, err)
		}
		var got, want any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("wordcount.sh < %s printed %q, not JSON: %v", tt.input, out, err)
		}
		if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("wordcount.sh < %s = %s, want %s", tt.input, out, tt.want)
		}
	}
}
