#!/bin/sh
# flood.sh writes to stdout without end.
while :; do
	echo 0123456789012345678901234567890123456789
done
