package callers

import (
	"strconv"
	"time"

	"github.com/a2ad/a2ad/internal/dn"
	"github.com/a2ad/a2ad/internal/yamlnode"
	yaml "go.yaml.in/yaml/v3"
)

// A caller's entry may also name its client certificates, by subject
// ("tls_subjects" in the file): with mutual TLS, a request whose verified
// client certificate has one of them is that caller, with its tiers, rate
// and limits, without presenting a key. The subjects belong to the caller,
// not to one of its keys: revoking a key leaves them, disabling or
// removing the entry ends them.

// AuthenticateSubject returns the caller part of the enabled entry whose
// tls_subjects hold subject (as RFC 4514 writes it, e.g.
// "CN=partner-a,O=Acme"; see package dn): a Key with no ID nor Hash,
// since no key was presented. Subjects match as encoded: the same RDNs in
// the same order, each with the same attributes and values (a
// multi-valued RDN matches only an entry that writes one). It returns
// false if no enabled entry holds subject.
func (k *Keys) AuthenticateSubject(subject string) (Key, bool) {
	if k == nil || subject == "" {
		return Key{}, false
	}
	n, err := dn.Parse(subject)
	if err != nil {
		return Key{}, false
	}
	key, found := k.bySubject[n.String()]
	if !found || !key.Enabled {
		return Key{}, false
	}
	return key.clone(), true
}

// tlsSubjects reads an entry's tls_subjects: a list of distinguished
// names, each in one entry of the file only.
func (l *keyLoader) tlsSubjects(v *yaml.Node, ptr string) []string {
	n := yamlnode.Resolve(v)
	if n.Kind != yaml.SequenceNode {
		l.Add(v, ptr, "tls_subjects must be a list of certificate subjects, got %s", yamlnode.Kind(n))
		return nil
	}
	if l.subjects == nil {
		l.subjects = map[string]firstUse{}
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		ip, il := ptr+"/"+strconv.Itoa(i), "tls_subjects["+strconv.Itoa(i)+"]"
		s, ok := l.Str(item, ip, il)
		if !ok {
			continue
		}
		n, err := dn.Parse(s)
		if err != nil {
			l.Add(item, ip, `%s must be a distinguished name such as "CN=partner-a,O=Acme" (RFC 4514), got %q: %v`, il, s, err)
			continue
		}
		canon := n.String()
		first, dup := l.subjects[canon]
		switch {
		case dup:
			l.Add(item, ip, "%s: subject %q is already caller %q's (line %d)", il, s, first.callerID, first.line)
		default:
			l.subjects[canon] = firstUse{l.ID, item.Line}
			out = append(out, s)
		}
	}
	return out
}

// addSubjects maps the tls_subjects of a caller's entry, whose keys are
// entry (each holds the caller's part), to that part.
func (k *Keys) addSubjects(entry []Key) {
	if len(entry) == 0 || len(entry[0].TLSSubjects) == 0 {
		return
	}
	caller := entry[0].clone()
	caller.ID, caller.Hash, caller.Created, caller.Revoked = "", [32]byte{}, time.Time{}, time.Time{}
	if k.bySubject == nil {
		k.bySubject = map[string]Key{}
	}
	for _, s := range caller.TLSSubjects {
		n, _ := dn.Parse(s) // the loader has parsed each
		k.bySubject[n.String()] = caller
	}
}
