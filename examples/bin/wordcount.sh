#!/bin/sh
# wordcount.sh is the exec backend of text::wordcount in examples/catalog.yaml.
#
# Contract (the same for every exec backend): a2ad writes the call's input,
# a JSON object, on stdin and reads one JSON value from stdout. Here the
# input is {"text": "..."} and the answer {"words": N, "characters": N}.
# A JSON object {"a2a.error": "message"} on stdout tells a2ad the call
# failed, with a message meant for the caller. Anything on stderr goes to
# a2ad's log.
#
# POSIX sh and awk only (no jq, no python). The awk program below reads the
# top-level JSON object, finds the "text" member, decodes its escapes and
# counts whitespace-separated words and Unicode characters (UTF-8 bytes that
# start a character; a \uXXXX escape or a surrogate pair is one character).
set -eu

LC_ALL=C
export LC_ALL

exec awk '
function fail(msg) {
	printf "{\"a2a.error\": \"%s\"}\n", msg
	exit 0
}
function ws() {
	while (pos <= n && index(" \t\r\n", substr(buf, pos, 1)) > 0)
		pos++
}
# str reads the JSON string at pos (on its opening quote) and returns it
# decoded. \u escapes become one placeholder character each (or a space
# for the whitespace ones), which is all that counting needs.
function str(   c, out, hex) {
	pos++
	out = ""
	while (pos <= n) {
		c = substr(buf, pos, 1)
		if (c == "\"") {
			pos++
			return out
		}
		if (c == "\\") {
			c = substr(buf, pos + 1, 1)
			pos += 2
			if (c == "n") out = out "\n"
			else if (c == "t") out = out "\t"
			else if (c == "r") out = out "\r"
			else if (c == "f") out = out "\f"
			else if (c == "b") out = out "\b"
			else if (c == "u") {
				hex = toupper(substr(buf, pos, 4))
				pos += 4
				if (hex == "0020" || hex == "0009" || hex == "000A" || hex == "000D") out = out " "
				else if (hex !~ /^DC/ && hex !~ /^D[D-F]/) out = out "x"
				# a low surrogate ends a pair already counted
			}
			else out = out c
			continue
		}
		out = out c
		pos++
	}
	fail("input must be a JSON object")
}
# skip skips the JSON value at pos.
function skip(   c, depth) {
	c = substr(buf, pos, 1)
	if (c == "\"") {
		str()
		return
	}
	if (c == "{" || c == "[") {
		depth = 0
		while (pos <= n) {
			c = substr(buf, pos, 1)
			if (c == "\"") {
				str()
				continue
			}
			if (c == "{" || c == "[") depth++
			else if (c == "}" || c == "]") depth--
			pos++
			if (depth == 0) return
		}
		fail("input must be a JSON object")
	}
	while (pos <= n && index(",}] \t\r\n", substr(buf, pos, 1)) == 0)
		pos++
}
{ buf = buf $0 "\n" }
END {
	n = length(buf)
	pos = 1
	ws()
	if (substr(buf, pos, 1) != "{") fail("input must be a JSON object")
	pos++
	found = 0
	for (;;) {
		ws()
		c = substr(buf, pos, 1)
		if (c == "}") break
		if (c != "\"") fail("input must be a JSON object")
		key = str()
		ws()
		if (substr(buf, pos, 1) != ":") fail("input must be a JSON object")
		pos++
		ws()
		if (key == "text") {
			if (substr(buf, pos, 1) != "\"") fail("text must be a string")
			text = str()
			found = 1
		} else {
			skip()
		}
		ws()
		c = substr(buf, pos, 1)
		if (c == ",") {
			pos++
			continue
		}
		if (c == "}") break
		fail("input must be a JSON object")
	}
	if (!found) fail("text is required")

	words = 0
	count = split(text, parts, /[ \t\n\r\v\f]+/)
	for (i = 1; i <= count; i++)
		if (parts[i] != "") words++

	# Characters: every byte except UTF-8 continuation bytes (0x80-0xBF).
	rest = text
	continuation = gsub(/[\200-\277]/, "", rest)
	printf "{\"words\": %d, \"characters\": %d}\n", words, length(text) - continuation
}
'
