#!/bin/sh
# progressexit.sh reads its input, reports "one", and 0.1 s later reports
# "two", prints {"ok": true} and exits.
cat >/dev/null
printf '%s\n' '{"a2a.progress": "one"}'
sleep 0.1
printf '%s\n' '{"a2a.progress": "two"}' '{"ok": true}'
