package main

// How the README's shown outputs are compared with what the examples
// print. JSON (an output that starts with { or [, or an SSE data: line)
// by shape: the same keys (an object with "…" among its members may have
// more), arrays of the same length (one with "…" may be longer), strings
// equal once ids, times, hashes, versions and tokens are masked ("…"
// inside a string stands for anything), numbers of any value, booleans
// and null equal. Text line by line, with the same masks, numbers outside
// quotes masked, and runs of spaces counted as one.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// matchOutput returns "" if got has the shape want shows, else what
// differs.
func matchOutput(want, got string) string {
	want, got = strings.TrimSpace(want), strings.TrimSpace(got)
	if strings.HasPrefix(want, "{") || strings.HasPrefix(want, "[") {
		return matchJSONStream(want, got)
	}
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	if len(wl) != len(gl) {
		return fmt.Sprintf("%d lines, want %d", len(gl), len(wl))
	}
	for i := range wl {
		if d := matchLine(wl[i], gl[i]); d != "" {
			return fmt.Sprintf("line %d: %s", i+1, d)
		}
	}
	return ""
}

func matchLine(want, got string) string {
	if w, ok := strings.CutPrefix(want, "data: "); ok {
		g, ok := strings.CutPrefix(got, "data: ")
		if !ok {
			return fmt.Sprintf("%q, want a data: line", got)
		}
		return matchJSONStream(w, g)
	}
	if !textPattern(want).MatchString(maskText(got)) {
		return fmt.Sprintf("%q does not read as %q", got, want)
	}
	return ""
}

var (
	maskUUID    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	maskTime    = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	maskHex     = regexp.MustCompile(`\b[0-9a-f]{16}\b`)
	maskNumber  = regexp.MustCompile(`\d+(\.\d+)?`)
	maskQuoted  = regexp.MustCompile(`"[^"]*"`)
	maskSpaces  = regexp.MustCompile(`\s+`)
	maskVersion = regexp.MustCompile(`^(dev(-\S+)?|v\d+\.\d+\.\d+([-+]\S+)?)$`) // what a build prints: dev, a tag, a pseudo-version
	maskToken   = regexp.MustCompile(`^[A-Za-z0-9_-]{24,}$`)
	maskAbbrev  = regexp.MustCompile(`^[0-9a-f]{2,}-?…$`) // an id or hash cut short: "0196…"
)

// maskText is a line with ids, times and hashes as placeholders, numbers
// outside quotes as N, and spaces collapsed.
func maskText(s string) string {
	s = maskUUID.ReplaceAllString(s, "<id>")
	s = maskTime.ReplaceAllString(s, "<time>")
	s = maskHex.ReplaceAllString(s, "<hex>")
	var b strings.Builder
	last := 0
	for _, q := range maskQuoted.FindAllStringIndex(s, -1) {
		b.WriteString(maskNumber.ReplaceAllString(s[last:q[0]], "N"))
		b.WriteString(s[q[0]:q[1]])
		last = q[1]
	}
	b.WriteString(maskNumber.ReplaceAllString(s[last:], "N"))
	return strings.TrimSpace(maskSpaces.ReplaceAllString(b.String(), " "))
}

// textPattern is the README's line as a pattern: masked as maskText, with
// "…" matching anything.
func textPattern(want string) *regexp.Regexp {
	parts := strings.Split(maskText(want), "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

// maskString masks a JSON string's value as a whole.
func maskString(s string) string {
	switch {
	case maskVersion.MatchString(s):
		return "<version>"
	case maskToken.MatchString(s) && !maskUUID.MatchString(s):
		return "<token>"
	}
	return maskText(s)
}

// matchJSONStream compares the JSON values want shows, one after another,
// with those got holds.
func matchJSONStream(want, got string) string {
	p := &shapeParser{s: want}
	var wants []*shape
	for p.skipSpace(); p.i < len(p.s); p.skipSpace() {
		v, err := p.value()
		if err != nil {
			return "the README's JSON: " + err.Error()
		}
		wants = append(wants, v)
	}
	dec := json.NewDecoder(strings.NewReader(got))
	dec.UseNumber()
	for i, w := range wants {
		var g any
		if err := dec.Decode(&g); err != nil {
			return fmt.Sprintf("JSON value %d: %v", i+1, err)
		}
		if d := w.match("", g); d != "" {
			return d
		}
	}
	if dec.More() {
		return fmt.Sprintf("more than the %d JSON values shown", len(wants))
	}
	return ""
}

// shape is a JSON value as the README shows it, "…" included.
type shape struct {
	kind string // object, array, string, number, bool, null, any
	keys []string
	obj  map[string]*shape
	arr  []*shape
	open bool // an object or array with "…" among its members
	// contains are strings the object holds somewhere: {…"text"…}.
	contains []string
	str      string
	other    any // a bool
}

func (w *shape) match(path string, g any) string {
	if path == "" {
		path = "/"
	}
	switch w.kind {
	case "any":
		return ""
	case "object":
		o, ok := g.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: %s, want an object", path, kindOf(g))
		}
		for _, k := range w.keys {
			v, ok := o[k]
			if !ok {
				return fmt.Sprintf("%s: no key %q", path, k)
			}
			if d := w.obj[k].match(strings.TrimSuffix(path, "/")+"/"+k, v); d != "" {
				return d
			}
		}
		for _, c := range w.contains {
			if !holdsString(o, c) {
				return fmt.Sprintf("%s: no string %q inside", path, c)
			}
		}
		if !w.open {
			for k := range o {
				if _, ok := w.obj[k]; !ok {
					return fmt.Sprintf("%s: key %q, which the README does not show", path, k)
				}
			}
		}
	case "array":
		a, ok := g.([]any)
		if !ok {
			return fmt.Sprintf("%s: %s, want an array", path, kindOf(g))
		}
		if len(a) < len(w.arr) || (!w.open && len(a) != len(w.arr)) {
			return fmt.Sprintf("%s: %d elements, want %d", path, len(a), len(w.arr))
		}
		for i, e := range w.arr {
			if d := e.match(fmt.Sprintf("%s/%d", strings.TrimSuffix(path, "/"), i), a[i]); d != "" {
				return d
			}
		}
	case "string":
		s, ok := g.(string)
		if !ok {
			return fmt.Sprintf("%s: %s, want a string", path, kindOf(g))
		}
		abbrev := maskAbbrev.MatchString(w.str) && (maskUUID.MatchString(s) || maskHex.MatchString(s))
		if !abbrev && maskString(s) != maskString(w.str) && !textPattern(w.str).MatchString(maskText(s)) {
			return fmt.Sprintf("%s: %q, want %q", path, s, w.str)
		}
	default:
		if kindOf(g) != w.kind || (w.kind == "bool" && g != w.other) {
			return fmt.Sprintf("%s: %v, want %s %v", path, g, w.kind, w.other)
		}
	}
	return ""
}

// holdsString reports whether s is a string anywhere in v.
func holdsString(v any, s string) bool {
	switch v := v.(type) {
	case string:
		return v == s
	case map[string]any:
		for _, e := range v {
			if holdsString(e, s) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if holdsString(e, s) {
				return true
			}
		}
	}
	return false
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// shapeParser reads JSON in which "…" stands for a value, or for more
// members of an object or elements of an array.
type shapeParser struct {
	s string
	i int
}

func (p *shapeParser) skipSpace() {
	for p.i < len(p.s) && strings.ContainsRune(" \t\r\n", rune(p.s[p.i])) {
		p.i++
	}
}

func (p *shapeParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d (%q): %s", p.i, p.s[p.i:min(len(p.s), p.i+20)], fmt.Sprintf(format, args...))
}

func (p *shapeParser) ellipsis() bool {
	p.skipSpace()
	if strings.HasPrefix(p.s[p.i:], "…") {
		p.i += len("…")
		return true
	}
	return false
}

func (p *shapeParser) value() (*shape, error) {
	if p.ellipsis() {
		return &shape{kind: "any"}, nil
	}
	if p.i >= len(p.s) {
		return nil, p.errorf("a value is missing")
	}
	switch c := p.s[p.i]; {
	case c == '{' || c == '[':
		return p.container(c)
	case c == '"':
		s, err := p.str()
		return &shape{kind: "string", str: s}, err
	}
	dec := json.NewDecoder(strings.NewReader(p.s[p.i:]))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, p.errorf("%v", err)
	}
	p.i += int(dec.InputOffset())
	return &shape{kind: kindOf(v), other: v}, nil
}

func (p *shapeParser) str() (string, error) {
	end := p.i + 1
	for ; end < len(p.s) && p.s[end] != '"'; end++ {
		if p.s[end] == '\\' {
			end++
		}
	}
	if end >= len(p.s) {
		return "", p.errorf("an unterminated string")
	}
	var s string
	if err := json.Unmarshal([]byte(p.s[p.i:end+1]), &s); err != nil {
		return "", p.errorf("%v", err)
	}
	p.i = end + 1
	return s, nil
}

// container reads an object or an array.
func (p *shapeParser) container(open byte) (*shape, error) {
	end := byte('}')
	sh := &shape{kind: "object", obj: map[string]*shape{}}
	if open == '[' {
		end, sh.kind = ']', "array"
	}
	p.i++
	for first := true; ; first = false {
		p.skipSpace()
		if p.i < len(p.s) && p.s[p.i] == end {
			p.i++
			return sh, nil
		}
		if !first {
			if p.i >= len(p.s) || p.s[p.i] != ',' {
				return nil, p.errorf("want , or %c", end)
			}
			p.i++
		}
		if save := p.i; p.ellipsis() {
			p.skipSpace()
			if p.i < len(p.s) && (p.s[p.i] == ',' || p.s[p.i] == end) {
				sh.open = true
				continue
			}
			// {…"text"…}: an object with that string somewhere inside.
			if p.i < len(p.s) && p.s[p.i] == '"' && sh.kind == "object" {
				str, err := p.str()
				if err != nil {
					return nil, err
				}
				if p.ellipsis() {
					sh.open, sh.contains = true, append(sh.contains, str)
					continue
				}
			}
			p.i = save
		}
		p.skipSpace()
		if sh.kind == "array" {
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			sh.arr = append(sh.arr, v)
			continue
		}
		if err := p.member(sh); err != nil {
			return nil, err
		}
	}
}

func (p *shapeParser) member(sh *shape) error {
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return p.errorf("want a key")
	}
	k, err := p.str()
	if err != nil {
		return err
	}
	p.skipSpace()
	if p.i >= len(p.s) || p.s[p.i] != ':' {
		return p.errorf("want :")
	}
	p.i++
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return err
	}
	if slices.Contains(sh.keys, k) {
		return p.errorf("key %q twice", k)
	}
	sh.keys = append(sh.keys, k)
	sh.obj[k] = v
	return nil
}

func TestMatchOutput(t *testing.T) {
	for _, tc := range []struct {
		want, got string
		ok        bool
	}{
		{`{"a":1,"b":"x"}`, `{"b":"x","a":2}`, true},
		{`{"a":1,"b":"x"}`, `{"a":1,"b":"y"}`, false},
		{`{"a":1}`, `{"a":1,"c":true}`, false},
		{`{"a":1,…}`, `{"a":1,"c":true}`, true},
		{`{"a":"1"}`, `{"a":1}`, false},
		{`{"id":"0196…","t":"2026-05-04T10:12:02.11Z"}`, `{"id":"019a-x","t":"2027-01-01T00:00:00Z"}`, true},
		{`{"id":"01a20440-4fee-770a-9ebb-8af8cfb50b24"}`, `{"id":"019ab2c4-0000-7000-8000-000000000000"}`, true},
		{`{"v":"dev"}`, `{"v":"v0.0.0-20261124060000-1b266ce1b266+dirty"}`, true},
		{`{"v":"dev"}`, `{"v":"v0.1.0+dirty"}`, true},
		{`{"v":"dev"}`, `{"v":"v0.1.1-0.20261124081500-5801a3e0f1b2"}`, true},
		{`{"v":"dev"}`, `{"v":"0.1"}`, false},
		{`{"h":[…]}`, `{"h":[1,2]}`, true},
		{`{"h":[1]}`, `{"h":[1,2]}`, false},
		{`{"s":{"state":"completed",…}}`, `{"s":{"state":"failed","x":1}}`, false},
		{`[1]` + "\n" + `{"a":null}`, `[2] {"a":null}`, true},
		{`{"a":true}`, `{"a":false}`, false},
		{"ID  STATE\nx   2 keys", "ID STATE\nx 17 keys", true},
		{`schema "2", 30 tasks`, `schema "5", 30 tasks`, false},
		{"id: 2\ndata: {\"a\":[…]}", "id: 7\ndata: {\"a\":[]}", true},
		{"a\nb", "a", false},
		{`{"m":{…"slept 1"…}}`, `{"m":{"p":[{"t":"slept 1"}]}}`, true},
		{`{"m":{…"slept 1"…}}`, `{"m":{"p":[{"t":"slept 2"}]}}`, false},
		{`{"v":"5d1c…"}`, `{"v":"074fba99b4e539a6"}`, true},
	} {
		if d := matchOutput(tc.want, tc.got); (d == "") != tc.ok {
			t.Errorf("matchOutput(%q, %q) = %q, want a match: %v", tc.want, tc.got, d, tc.ok)
		}
	}
}
