#!/bin/sh
# env.sh prints some of its environment and its working directory.
cat >/dev/null
printf '{"foo":"%s","leak":"%s","path_set":%s,"pwd":"%s"}' \
	"$FOO" "${A2AD_TEST_LEAK:-}" "$([ -n "$PATH" ] && echo true || echo false)" "$(pwd)"
