#!/bin/sh
# stderr.sh reads its input, writes one line to stderr and {} to stdout.
cat >/dev/null
echo "hello from stderr" >&2
echo '{}'
