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

// section reads the keys of the backend section e (http, exec), which
// must be a mapping whose keys are among allowed. It returns false if e
// is not a mapping.
func (l *loader) section(e yamlnode.Entry, ptr, name string, allowed []string) (map[string]yamlnode.Entry, bool) {
	n := yamlnode.Resolve(e.Val)
	if n.Kind != yaml.MappingNode {
		l.Add(e.Val, ptr, "%s must be a mapping, got %s", name, yamlnode.Kind(n))
		return nil, false
	}
	return l.Fields(n, ptr, "in "+name, allowed), true
}

// httpBackend checks the keys kv of the http section e; the URL and
// header values are resolved from the environment.
func (l *loader) httpBackend(e yamlnode.Entry, kv map[string]yamlnode.Entry, ptr string) *HTTPBackend {
	b := &HTTPBackend{Method: http.MethodPost}

	if u, ok := kv["url"]; !ok {
		l.Add(e.Val, ptr, "http.url is required")
	} else if raw, ok := l.Str(u.Val, ptr+"/url", "http.url"); ok {
		if s, ok := l.expand(raw, u.Val, ptr+"/url", "http.url"); ok {
			if msg := checkURL(s); msg != "" {
				// raw, not s: the resolved URL may hold a variable's value.
				l.Add(u.Val, ptr+"/url", "http.url %s, got %q", msg, raw)
			}
			b.URL = s
		}
	}

	if m, ok := kv["method"]; ok {
		if s, ok := l.Str(m.Val, ptr+"/method", "http.method"); ok {
			if up := strings.ToUpper(s); slices.Contains(httpMethods, up) {
				b.Method = up
			} else {
				l.Add(m.Val, ptr+"/method", "http.method must be one of %s, got %q", strings.Join(httpMethods, ", "), s)
			}
		}
	}

	if h, ok := kv["headers"]; ok {
		b.Headers = l.headers(h.Val, ptr+"/headers")
	}

	if m, ok := kv["max_response_bytes"]; ok {
		b.MaxResponseBytes = l.outputCap(m.Val, ptr+"/max_response_bytes", "http.max_response_bytes")
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
		l.Add(v, ptr, "http.headers must be a mapping, got %s", yamlnode.Kind(n))
		return nil
	}
	out := make(map[string]string, len(n.Content)/2)
	firstLine := map[string]int{}
	for e := range l.Entries(n, ptr, "http.headers keys") {
		name := e.Name
		if !validHeaderName(name) {
			l.Add(e.Key, e.Ptr, "http.headers key %q is not a valid header name", name)
			continue
		}
		canon := http.CanonicalHeaderKey(name)
		if line, dup := firstLine[canon]; dup {
			l.Add(e.Key, e.Ptr, "duplicate header %q (first at line %d; header names are case-insensitive)", name, line)
			continue
		}
		firstLine[canon] = e.Key.Line
		val, ok := l.secret(e, "http.headers."+name)
		if !ok {
			continue
		}
		if strings.ContainsAny(val, "\r\n\x00") {
			l.Add(e.Val, e.Ptr, "%s must not contain line breaks or NUL characters", "http.headers."+name)
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

// execBackend checks the keys kv of the exec section e; relative paths
// are resolved against the catalogue's directory, which is also the
// default working directory.
func (l *loader) execBackend(e yamlnode.Entry, kv map[string]yamlnode.Entry, ptr string) *ExecBackend {
	b := &ExecBackend{Dir: l.dir}

	if a, ok := kv["argv"]; !ok {
		l.Add(e.Val, ptr, "exec.argv is required")
	} else {
		before := l.Count()
		argv := l.strList(a.Val, ptr+"/argv", "exec.argv", nil)
		switch {
		case l.Count() > before:
		case len(argv) == 0:
			l.Add(a.Val, ptr+"/argv", "exec.argv must not be empty")
		default:
			if prog, ok := l.program(argv[0], yamlnode.Resolve(a.Val).Content[0], ptr+"/argv/0"); ok {
				argv[0] = prog
				b.Argv = argv
			}
		}
	}

	if d, ok := kv["dir"]; ok {
		if s, ok := l.Str(d.Val, ptr+"/dir", "exec.dir"); ok && s != "" {
			dir := s
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(l.dir, dir)
			}
			switch fi, err := os.Stat(dir); {
			case errors.Is(err, fs.ErrNotExist):
				l.Add(d.Val, ptr+"/dir", "exec.dir %q does not exist", s)
			case err != nil:
				l.Add(d.Val, ptr+"/dir", "exec.dir %q cannot be used: %v", s, unwrapPath(err))
			case !fi.IsDir():
				l.Add(d.Val, ptr+"/dir", "exec.dir %q is not a directory", s)
			default:
				b.Dir = dir
			}
		}
	}

	if en, ok := kv["env"]; ok {
		b.Env = l.env(en.Val, ptr+"/env")
	}
	if k, ok := kv["kill_grace"]; ok {
		b.KillGrace = l.duration(k.Val, ptr+"/kill_grace", "exec.kill_grace")
	}
	if m, ok := kv["max_output_bytes"]; ok {
		b.MaxOutputBytes = l.outputCap(m.Val, ptr+"/max_output_bytes", "exec.max_output_bytes")
	}
	b.Nice = DefaultNice
	if v, ok := kv["nice"]; ok {
		if i, ok := l.integer(v.Val, ptr+"/nice", "exec.nice"); ok {
			if i < 0 || i > 19 {
				l.Add(v.Val, ptr+"/nice", "exec.nice must be from 0 to 19, got %d", i)
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
		l.Add(v, ptr, "exec.argv[0] must not be empty")
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
		l.Add(v, ptr, "exec.argv[0] %q does not exist (looked for %s)", prog, p)
	case err != nil:
		l.Add(v, ptr, "exec.argv[0] %q cannot be used: %v", prog, unwrapPath(err))
	case fi.IsDir():
		l.Add(v, ptr, "exec.argv[0] %q is a directory", prog)
	case fi.Mode().Perm()&0o111 == 0:
		l.Add(v, ptr, "exec.argv[0] %q is not executable", prog)
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
		l.Add(v, ptr, "exec.env must be a mapping, got %s", yamlnode.Kind(n))
		return nil
	}
	var out []string
	firstLine := map[string]int{}
	for e := range l.Entries(n, ptr, "exec.env keys") {
		if !varName.MatchString(e.Name) {
			l.Add(e.Key, e.Ptr, "exec.env key %q is not a valid variable name "+
				"(letters, digits and _, not starting with a digit)", e.Name)
			continue
		}
		if line, dup := firstLine[e.Name]; dup {
			l.Add(e.Key, e.Ptr, "duplicate key %q (first at line %d)", e.Name, line)
			continue
		}
		firstLine[e.Name] = e.Key.Line
		val, ok := l.secret(e, "exec.env."+e.Name)
		if !ok {
			continue
		}
		if strings.ContainsRune(val, 0) {
			l.Add(e.Val, e.Ptr, "%s must not contain NUL characters", "exec.env."+e.Name)
			continue
		}
		out = append(out, e.Name+"="+val)
	}
	return out
}

// secret reads the string value of e, a header or variable whose value is
// a secret, with its ${VAR} references resolved. label names it in
// messages, which never print the value.
func (l *loader) secret(e yamlnode.Entry, label string) (string, bool) {
	raw, ok := l.Str(e.Val, e.Ptr, label)
	if !ok {
		return "", false
	}
	return l.expand(raw, e.Val, e.Ptr, label)
}

// builtinBackend checks a builtin name.
func (l *loader) builtinBackend(e yamlnode.Entry, ptr string) *BuiltinBackend {
	name, ok := l.Str(e.Val, ptr, "builtin")
	if !ok {
		return nil
	}
	b, err := NewBuiltin(name)
	if err != nil {
		l.Add(e.Val, ptr, "unknown builtin %q; known: %s", name, strings.Join(BuiltinNames(), ", "))
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
