package v1

import (
	"encoding/json"
	"strings"

	"github.com/a2ad/a2ad/a2a/internal/wire"
	"github.com/a2ad/a2ad/internal/jsonw"
)

// field returns the member name of m, the object at path, as ProtoJSON
// parsers read it: by its JSON name (lowerCamelCase, as name is given) or
// by its proto field name (snake_case: task_id for taskId), nil if it is
// absent. Given under both names, it is a problem located with the JSON
// name, and the JSON name's value is returned. Repeated under one name,
// the last wins, as jsonw.Members.Get has it. It allocates nothing unless
// there is a problem: it is on the path of every request.
func field(c *wire.Checker, path string, m jsonw.Members, name string) json.RawMessage {
	if !hasUpper(name) { // one word: both names are the same
		return m.Get(name)
	}
	var camel, proto json.RawMessage
	var protoKey string
	for i := range m {
		switch k := m[i].Key; {
		case k == name:
			camel = m[i].Val
		case isProtoName(k, name):
			proto, protoKey = m[i].Val, k
		}
	}
	switch {
	case camel == nil:
		return proto
	case proto != nil:
		c.Add(path+"/"+name, `is given twice, as "`+name+`" and as "`+protoKey+`"`)
	}
	return camel
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// isProtoName reports whether key is the proto field name of name, a
// lowerCamelCase JSON name: name with each upper-case letter made "_" and
// its lower case (historyLength: history_length).
func isProtoName(key, name string) bool {
	j := 0
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if 'A' <= ch && ch <= 'Z' {
			if j >= len(key) || key[j] != '_' {
				return false
			}
			j++
			ch += 'a' - 'A'
		}
		if j >= len(key) || key[j] != ch {
			return false
		}
		j++
	}
	return j == len(key)
}

// corePaths are the places where 1.0 params differ from the core (0.3)
// names that the task service locates its problems with, longest first.
var corePaths = [...]struct{ core, v1 string }{
	// SendMessageConfiguration.taskPushNotificationConfig.
	{"/configuration/pushNotificationConfig", "/configuration/taskPushNotificationConfig"},
	// CreateTaskPushNotificationConfig's params are the config itself.
	{"/pushNotificationConfig", ""},
}

// ProblemPath returns path, the JSON pointer of a problem in params as the
// task service names it (the core names, which are 0.3's), as it reads in
// the params of the 1.0 method: /pushNotificationConfig/url is /url (the
// 1.0 push config is flattened), /configuration/pushNotificationConfig is
// /configuration/taskPushNotificationConfig. Any other path is the same
// in both.
func ProblemPath(path string) string {
	for _, p := range corePaths {
		rest, ok := strings.CutPrefix(path, p.core)
		if !ok || (rest != "" && rest[0] != '/') {
			continue
		}
		if p.v1+rest == "" {
			return "/"
		}
		return p.v1 + rest
	}
	return path
}
