#!/bin/sh
# progress.sh reads its input and reports progress as it goes: three notes
# 0.2 s apart, a text chunk and a data artifact. If $1 is set, it then
# waits (at most 5 s) until the file $1 exists. After 0.3 s more it prints
# a pretty-printed result.
cat >/dev/null
printf '%s\n' '{"a2a.progress": {"message": "Fetched 1 of 3 pages"}}'
sleep 0.2
printf '%s\n' '{"a2a.progress": "Fetched 2 of 3 pages"}'
sleep 0.2
printf '%s\n' '{"a2a.progress": {"message": "Fetched 3 of 3 pages"}}'
printf '%s\n' '{"a2a.artifact": {"artifactId": "report", "name": "Report", "text": "page 1\n", "append": true, "lastChunk": false}}'
printf '%s\n' '{"a2a.artifact": {"artifactId": "rows", "data": {"rows": [1, 2, 3]}, "lastChunk": true}}'
if [ -n "$1" ]; then
	i=0
	while [ ! -e "$1" ] && [ "$i" -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
fi
sleep 0.3
printf '{\n  "pages": 3,\n  "ok": true\n}\n'
