#!/usr/bin/env bash
# Interop check: the official A2A JS SDK client (@a2a-js/sdk, pinned by
# package-lock.json) against the real a2ad binary, started with the README's
# run command on the shipped example catalogue: its 1.0 client over JSON-RPC
# and over HTTP+JSON (check.mjs jsonrpc, rest), then its 0.3 compatibility
# mode over 0.3 JSON-RPC against an a2ad serving the 0.3 card (check.mjs
# v0.3); then the SDK's card signature verifier (signed.mjs) against an a2ad
# with an API key and three card signing keys (ES256, RS256, EdDSA), and
# through a key rotation with a reload (rotation.mjs); then the SDK's default
# resolver and client against a keyed a2ad with an OpenID Connect issuer too
# (oidc.mjs).
# Needs Go, Node >= 20 and npm.
# Exits non-zero when the build, the server or any check fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
pid=
stop() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	pid=
}
cleanup() {
	stop
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

# start LOG ARGS...: runs a2ad serve on the example catalogue with ARGS, on
# random loopback ports, the admin listener's too (a fixed one would clash
# with an a2ad already running, the README's on 8080 and 8081 say), and sets
# url from the "a2ad serving" log line.
start() {
	local log=$1
	shift
	cd "$root"
	"$tmp/a2ad" serve --catalog examples/catalog.yaml --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 "$@" >"$log" 2>&1 &
	pid=$!
	url=
	for _ in $(seq 1 100); do
		if ! kill -0 "$pid" 2>/dev/null; then break; fi
		url=$(sed -n 's/.*"base_url":"\([^"]*\)".*"message":"a2ad serving".*/\1/p' "$log")
		if [ -n "$url" ]; then break; fi
		sleep 0.1
	done
	if [ -z "$url" ] || ! node -e 'fetch(process.argv[1]).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$url/healthz"; then
		echo "FAIL server: a2ad did not start or did not answer ${url:-its base URL}/healthz; its log:"; cat "$log"; exit 1
	fi
}

# check LOG MODE: runs check.mjs in MODE against the a2ad at url; on a
# failure shows the end of LOG and sets status.
status=0
check() {
	cd "$here"
	local rc=0
	node check.mjs "$url" "$2" || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "# a2ad log (last 20 lines):"; tail -n 20 "$1"
		status=$rc
	fi
}

start "$tmp/log" --store "$tmp/a2ad.db"
check "$tmp/log" jsonrpc
check "$tmp/log" rest
stop
# The SDK's 0.3 mode speaks 0.3 only to a card of 0.3 alone: on the dual
# card it picks the 1.0 interface.
start "$tmp/v03.log" --store "$tmp/v03.db" --card-versions 0.3
check "$tmp/v03.log" v0.3
stop

# Signed cards: one key file per algorithm, made by Node; an API key for
# the extended card; the kids from the "agent card signed" log line.
cd "$tmp"
node -e '
const c = require("node:crypto"), fs = require("node:fs");
const pem = (k) => k.privateKey.export({ type: "pkcs8", format: "pem" });
fs.writeFileSync("es256.pem", pem(c.generateKeyPairSync("ec", { namedCurve: "P-256" })));
fs.writeFileSync("rs256.pem", pem(c.generateKeyPairSync("rsa", { modulusLength: 2048 })));
fs.writeFileSync("eddsa.pem", pem(c.generateKeyPairSync("ed25519")));'
secret=$("$tmp/a2ad" keys create --keys "$tmp/keys.yaml" --id interop --tier partner 2>/dev/null | tail -n 1)
start "$tmp/signed.log" --store "$tmp/signed.db" --keys "$tmp/keys.yaml" --allow-anonymous --anonymous-tier partner \
	--card-signing-key "$tmp/es256.pem" --card-signing-key "$tmp/rs256.pem" --card-signing-key "$tmp/eddsa.pem"
kids=$(sed -n 's/.*"kids":\[\([^]]*\)\].*"message":"agent card signed".*/\1/p' "$tmp/signed.log" | tr -d '"' | tr ',' ' ')
cd "$here"
signed=0
# shellcheck disable=SC2086 # one argument per kid
node signed.mjs "$url" "$secret" $kids || signed=$?
if [ "$signed" -ne 0 ]; then
	echo "# a2ad (signed cards) log (last 20 lines):"; tail -n 20 "$tmp/signed.log"
	status=$signed
fi
# A key rotation: rotation.mjs runs the binary with two key files, rewrites
# one and reloads.
mkdir "$tmp/rotation"
node rotation.mjs "$tmp/a2ad" "$root/examples/catalog.yaml" "$tmp/rotation" || status=$?
# OIDC: the JS SDK's default resolver and client against a keyed a2ad with
# an OpenID Connect issuer (oidc.mjs runs the issuer and the binary).
"$tmp/a2ad" keys create --keys "$tmp/oidc-keys.yaml" --id acme --tier partner >/dev/null 2>&1
node oidc.mjs "$tmp/a2ad" "$root/examples/catalog.yaml" "$tmp/oidc-keys.yaml" "$tmp/oidc.db" || status=$?
exit "$status"
