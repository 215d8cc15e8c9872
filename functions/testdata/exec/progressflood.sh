#!/bin/sh
# progressflood.sh writes progress lines to stdout without end.
while :; do
	echo '{"a2a.progress": {"message": "still going"}}'
done
