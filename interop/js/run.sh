#!/usr/bin/env bash
# Interop check: the official A2A JS SDK client (@a2a-js/sdk, pinned by
# package-lock.json) against the real a2ad binary, started with the README's
# run command on the shipped example catalogue. Needs Go, Node >= 20 and npm.
# Exits non-zero when the build, the server or any check fails.
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

# npm ci only when node_modules is missing or older than package.json or the lockfile.
cd "$here"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ] || [ package.json -nt node_modules/.package-lock.json ]; then
	npm ci --no-audit --no-fund
fi

# Random loopback ports, the admin listener's too (a fixed one would clash
# with an a2ad already running, the README's on 8080 and 8081 say): the
# base URL comes from the "a2ad serving" log line.
cd "$root"
"$tmp/a2ad" serve --catalog examples/catalog.yaml --store "$tmp/a2ad.db" --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 >"$tmp/log" 2>&1 &
pid=$!
url=
for _ in $(seq 1 100); do
	if ! kill -0 "$pid" 2>/dev/null; then break; fi
	url=$(sed -n 's/.*"base_url":"\([^"]*\)".*"message":"a2ad serving".*/\1/p' "$tmp/log")
	if [ -n "$url" ]; then break; fi
	sleep 0.1
done
if [ -z "$url" ] || ! node -e 'fetch(process.argv[1]).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$url/healthz"; then
	echo "FAIL server: a2ad did not start or did not answer ${url:-its base URL}/healthz; its log:"; cat "$tmp/log"; exit 1
fi

cd "$here"
status=0
node check.mjs "$url" || status=$?
if [ "$status" -ne 0 ]; then
	echo "# a2ad log (last 20 lines):"; tail -n 20 "$tmp/log"
fi
exit "$status"
