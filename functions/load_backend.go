package functions

import (
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/a2ad/a2ad/internal/yamlnode"
	yaml "go.yaml.in/yaml/v3"
)

// This file checks the backend sections of a catalogue entry.

var (
	httpKeys    = []string{"url", "method", "headers", "max_response_bytes"}
	execKeys    = []string{"argv", "dir", "env", "kill_grace", "max_output_bytes", "nice"}
	httpMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
)

// httpBackend checks an http section; the URL and header values are
// resolved from the environment.
func (l *loader) httpBackend(e entry, ptr string) *HTTPBackend {
	n := yamlnode.Resolve(e.val)
	if n.Kind != yaml.MappingNode {
		l.add(e.val, ptr, "http must be a mapping, got %s", yamlnode.Kind(n))
		return nil
	}
	kv := l.fields(n, ptr, "in http", httpKeys)
	b := &HTTPBackend{Method: http.MethodPost}

	if u, ok := kv["url"]; !ok {
		l.add(e.val, ptr, "http.url is required")
	} else if raw, ok := l.str(u.val, ptr+"/url", "http.url"); ok {
		if s, ok := l.expand(raw, u.val, ptr+"/url", "http.url"); ok {
			if msg := checkURL(s); msg != "" {
				// raw, not s: the resolved URL may hold a variable's value.
				l.add(u.val, ptr+"/url", "http.url %s, got %q", msg, raw)
			}
			b.URL = s
		}
	}

	if m, ok := kv["method"]; ok {
		if s, ok := l.str(m.val, ptr+"/method", "http.method"); ok {
			if up := strings.ToUpper(s); slices.Contains(httpMethods, up) {
				b.Method = up
			} else {
				l.add(m.val, ptr+"/method", "http.method must be one of %s, got %q", strings.Join(httpMethods, ", "), s)
			}
		}
	}

	if h, ok := kv["headers"]; ok {
		b.Headers = l.headers(h.val, ptr+"/headers")
	}

	if m, ok := kv["max_response_bytes"]; ok {
		b.MaxResponseBytes = l.outputCap(m.val, ptr+"/max_response_bytes", "http.max_response_bytes")
	}
	return b
}

// checkURL returns what is wrong with an http backend URL, or "".
func checkURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return "must not be empty"
	case err != nil:
		return "is not a valid URL"
	case !u.IsAbs():
		return "must be an absolute URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "must use the http or https scheme"
	case u.Host == "":
		return "must have a host"
	}
	return ""
}

// headers reads the http headers mapping. Header values are secrets: no
// message prints them.
func (l *loader) headers(v *yaml.Node, ptr string) map[string]string {
	n := yamlnode.Resolve(v)
	if n.Kind != yaml.MappingNode {
		l.add(v, ptr, "http.headers must be a mapping, got %s", yamlnode.Kind(n))
		return nil
	}
	out := make(map[string]string, len(n.Content)/2)
	firstLine := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := yamlnode.Resolve(kn)
		if k.Kind != yaml.ScalarNode {
			l.add(kn, ptr, "http.headers keys must be strings, got %s", yamlnode.Kind(k))
			continue
		}
		name := k.Value
		kp := ptr + "/" + escapePointer(name)
		if !validHeaderName(name) {
			l.add(kn, kp, "http.headers key %q is not a valid header name", name)
			continue
		}
		canon := http.CanonicalHeaderKey(name)
		if line, dup := firstLine[canon]; dup {
			l.add(kn, kp, "duplicate header %q (first at line %d; header names are case-insensitive)", name, line)
			continue
		}
		firstLine[canon] = kn.Line
		label := "http.headers." + name
		raw, ok := l.str(vn, kp, label)
		if !ok {
			continue
		}
		val, ok := l.expand(raw, vn, kp, label)
		if !ok {
			continue
		}
		if strings.ContainsAny(val, "\r\n\x00") {
			l.add(vn, kp, "%s must not contain line breaks or NUL characters", label)
			continue
		}
		out[name] = val
	}
	return out
}

// validHeaderName reports whether s is an HTTP token (RFC 9110, 5.1).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// execBackend checks an exec section; relative paths are resolved against
// the catalogue's directory, which is also the default working directory.
func (l *loader) execBackend(e entry, ptr string) *ExecBackend {
	n := yamlnode.Resolve(e.val)
	if n.Kind != yaml.MappingNode {
		l.add(e.val, ptr, "exec must be a mapping, got %s", yamlnode.Kind(n))
		return nil
	}
	kv := l.fields(n, ptr, "in exec", execKeys)
	b := &ExecBackend{Dir: l.dir}

	if a, ok := kv["argv"]; !ok {
		l.add(e.val, ptr, "exec.argv is required")
	} else {
		before := len(l.problems)
		argv := l.strList(a.val, ptr+"/argv", "exec.argv", nil)
		switch {
		case len(l.problems) > before:
		case len(argv) == 0:
			l.add(a.val, ptr+"/argv", "exec.argv must not be empty")
		default:
			if prog, ok := l.program(argv[0], yamlnode.Resolve(a.val).Content[0], ptr+"/argv/0"); ok {
				argv[0] = prog
				b.Argv = argv
			}
		}
	}

	if d, ok := kv["dir"]; ok {
		if s, ok := l.str(d.val, ptr+"/dir", "exec.dir"); ok && s != "" {
			dir := s
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(l.dir, dir)
			}
			switch fi, err := os.Stat(dir); {
			case errors.Is(err, fs.ErrNotExist):
				l.add(d.val, ptr+"/dir", "exec.dir %q does not exist", s)
			case err != nil:
				l.add(d.val, ptr+"/dir", "exec.dir %q cannot be used: %v", s, unwrapPath(err))
			case !fi.IsDir():
				l.add(d.val, ptr+"/dir", "exec.dir %q is not a directory", s)
			default:
				b.Dir = dir
			}
		}
	}

	if en, ok := kv["env"]; ok {
		b.Env = l.env(en.val, ptr+"/env")
	}
	if k, ok := kv["kill_grace"]; ok {
		b.KillGrace = l.duration(k.val, ptr+"/kill_grace", "exec.kill_grace")
	}
	if m, ok := kv["max_output_bytes"]; ok {
		b.MaxOutputBytes = l.outputCap(m.val, ptr+"/max_output_bytes", "exec.max_output_bytes")
	}
	b.Nice = DefaultNice
	if v, ok := kv["nice"]; ok {
		if i, ok := l.integer(v.val, ptr+"/nice", "exec.nice"); ok {
			if i < 0 || i > 19 {
				l.add(v.val, ptr+"/nice", "exec.nice must be from 0 to 19, got %d", i)
			} else {
				b.Nice = int(i)
			}
		}
	}
	return b
}

// program resolves argv[0]: a relative path with a slash is taken from the
// catalogue's directory and must be an executable file; a bare name is
// left for the PATH lookup when the function runs.
func (l *loader) program(prog string, v *yaml.Node, ptr string) (string, bool) {
	if prog == "" {
		l.add(v, ptr, "exec.argv[0] must not be empty")
		return "", false
	}
	if !strings.ContainsRune(prog, '/') && !strings.ContainsRune(prog, filepath.Separator) {
		return prog, true
	}
	p := prog
	if !filepath.IsAbs(p) {
		p = filepath.Join(l.dir, p)
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		l.add(v, ptr, "exec.argv[0] %q does not exist (looked for %s)", prog, p)
	case err != nil:
		l.add(v, ptr, "exec.argv[0] %q cannot be used: %v", prog, unwrapPath(err))
	case fi.IsDir():
		l.add(v, ptr, "exec.argv[0] %q is a directory", prog)
	case fi.Mode().Perm()&0o111 == 0:
		l.add(v, ptr, "exec.argv[0] %q is not executable", prog)
	default:
		return p, true
	}
	return "", false
}

// env reads the exec environment as KEY=VALUE, in file order. Values are
// secrets: no message prints them.
func (l *loader) env(v *yaml.Node, ptr string) []string {
	n := yamlnode.Resolve(v)
	if n.Kind != yaml.MappingNode {
		l.add(v, ptr, "exec.env must be a mapping, got %s", yamlnode.Kind(n))
		return nil
	}
	var out []string
	firstLine := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k := yamlnode.Resolve(kn)
		if k.Kind != yaml.ScalarNode {
			l.add(kn, ptr, "exec.env keys must be strings, got %s", yamlnode.Kind(k))
			continue
		}
		kp := ptr + "/" + escapePointer(k.Value)
		if !varName.MatchString(k.Value) {
			l.add(kn, kp, "exec.env key %q is not a valid variable name "+
				"(letters, digits and _, not starting with a digit)", k.Value)
			continue
		}
		if line, dup := firstLine[k.Value]; dup {
			l.add(kn, kp, "duplicate key %q (first at line %d)", k.Value, line)
			continue
		}
		firstLine[k.Value] = kn.Line
		label := "exec.env." + k.Value
		raw, ok := l.str(vn, kp, label)
		if !ok {
			continue
		}
		val, ok := l.expand(raw, vn, kp, label)
		if !ok {
			continue
		}
		if strings.ContainsRune(val, 0) {
			l.add(vn, kp, "%s must not contain NUL characters", label)
			continue
		}
		out = append(out, k.Value+"="+val)
	}
	return out
}

// builtinBackend checks a builtin name.
func (l *loader) builtinBackend(e entry, ptr string) *BuiltinBackend {
	name, ok := l.str(e.val, ptr, "builtin")
	if !ok {
		return nil
	}
	b, err := NewBuiltin(name)
	if err != nil {
		l.add(e.val, ptr, "unknown builtin %q; known: %s", name, strings.Join(BuiltinNames(), ", "))
		return nil
	}
	return b
}

// unwrapPath drops the path from a file system error: messages name the
// path as the catalogue wrote it.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
