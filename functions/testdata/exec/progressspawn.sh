#!/bin/sh
# progressspawn.sh starts a grandchild, writes its own pid and the
# grandchild's, one a line, to the file $1 (atomically), then reports
# progress every 0.05 s without end.
sleep 60 &
printf '%s\n%s\n' "$$" "$!" >"$1.tmp"
mv "$1.tmp" "$1"
i=0
while :; do
	i=$((i + 1))
	echo "{\"a2a.progress\": \"tick $i\"}"
	sleep 0.05
done
