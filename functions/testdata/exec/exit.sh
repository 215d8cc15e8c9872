#!/bin/sh
# exit.sh reads its input, complains on stderr, and exits with status $1.
cat >/dev/null
echo "boom: secret-detail" >&2
exit "$1"
