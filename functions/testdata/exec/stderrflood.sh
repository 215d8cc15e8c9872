#!/bin/sh
# stderrflood.sh writes a 2000-byte line and then 149 short lines to stderr.
i=0
while [ "$i" -lt 200 ]; do
	printf 'abcdefghij' >&2
	i=$((i + 1))
done
echo >&2
i=1
while [ "$i" -lt 150 ]; do
	echo "line $i" >&2
	i=$((i + 1))
done
echo '{}'
