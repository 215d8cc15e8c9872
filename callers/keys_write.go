package callers

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/a2ad/a2ad/internal/syncdir"
	"github.com/a2ad/a2ad/internal/yamlnode"
	yaml "go.yaml.in/yaml/v3"
)

// NewKey is a key AppendKey made.
type NewKey struct {
	ID string // the key's id
	// Secret is the key's secret, written nowhere: show it once.
	Secret string
	// NewCaller is true when the key's caller had no entry before.
	NewCaller bool
	// Replaced is true when ReplaceKey replaced an entry of the caller.
	Replaced bool
}

// AppendKey adds a key for callerID to the keys file at path, created at
// now, and returns it with its secret, which is written nowhere: the file
// holds only its hash. The file is created if it does not exist. A caller
// already in the file gets one more key, which takes its tiers (tiers may
// be empty; if not, they must be the caller's); a new caller gets an
// enabled entry with tiers, which must list at least one tier.
//
// The file is written in version 2 of the format (a version 1 file is
// converted: each entry's hash becomes its keys list, with the id the key
// had), replaced atomically, and has mode 0600. AppendKey returns an
// error, and leaves the file alone, if callerID or a tier is invalid, or
// the existing file has problems (its *LoadError). Concurrent calls on the
// same file may lose a key.
func AppendKey(path, callerID string, tiers []string, now time.Time) (NewKey, error) {
	return putKey(path, callerID, tiers, now, false)
}

// ReplaceKey is AppendKey, but the entry callerID has already, if any, is
// replaced by a new one with the new key alone (enabled, with tiers, which
// must list at least one tier, and none of the old entry's own limits): the
// old keys stop working once the server reloads the file.
func ReplaceKey(path, callerID string, tiers []string, now time.Time) (NewKey, error) {
	if len(tiers) == 0 {
		return NewKey{}, fmt.Errorf("append key for caller %q: tiers must list at least one tier", callerID)
	}
	return putKey(path, callerID, tiers, now, true)
}

func putKey(path, callerID string, tiers []string, now time.Time, replace bool) (NewKey, error) {
	if !callerIDPattern.MatchString(callerID) {
		return NewKey{}, errors.New("append key: caller " + badCallerID)
	}
	for i, t := range tiers {
		if t == "" || slices.Contains(tiers[:i], t) {
			return NewKey{}, fmt.Errorf("append key for caller %q: tiers must be distinct and not empty", callerID)
		}
	}
	ed, err := openKeysEdit(path, "append key")
	if err != nil {
		return NewKey{}, err
	}
	secret, err := NewSecret()
	if err != nil {
		return NewKey{}, fmt.Errorf("append key: %w", err)
	}
	hash, _ := parseHash(HashSecret(secret))
	nk := NewKey{ID: KeyIDOf(hash), Secret: secret}
	keyNode := mapNode("id", strNode(nk.ID), "hash", strNode(HashSecret(secret)), "created", timeNode(now))

	oldLen := len(ed.ks.byHash)
	if old := ed.entry(callerID); replace && old != nil {
		nk.Replaced = true
		ed.list.Content = slices.DeleteFunc(ed.list.Content, func(e *yaml.Node) bool { return yamlnode.Resolve(e) == old })
		for _, k := range ed.ks.byHash {
			if k.CallerID == callerID {
				oldLen--
			}
		}
	}
	if entry := ed.entry(callerID); entry != nil {
		have := ed.tiers(callerID)
		if len(tiers) > 0 && !slices.Equal(tiers, have) {
			return NewKey{}, fmt.Errorf("append key for caller %q: its tiers are %s, not %s: a new key takes its caller's tiers (change them in the file)",
				callerID, strings.Join(have, ","), strings.Join(tiers, ","))
		}
		_, list := yamlnode.Lookup(entry, "keys")
		list = yamlnode.Resolve(list)
		list.Content = append(list.Content, keyNode)
	} else {
		if len(tiers) == 0 {
			return NewKey{}, fmt.Errorf("append key for new caller %q: tiers must list at least one tier", callerID)
		}
		tierList := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		for _, t := range tiers {
			tierList.Content = append(tierList.Content, strNode(t))
		}
		keyList := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{keyNode}}
		ed.list.Content = append(ed.list.Content, mapNode("id", strNode(callerID), "tiers", tierList, "keys", keyList))
		nk.NewCaller = !nk.Replaced
	}
	err = ed.write(func(ks *Keys) error {
		if len(ks.byHash) != oldLen+1 {
			return fmt.Errorf("it would hold %d keys instead of %d", len(ks.byHash), oldLen+1)
		}
		if _, ok := ks.Authenticate(secret); !ok {
			return errors.New("the new key would not authenticate")
		}
		return nil
	})
	if err != nil {
		return NewKey{}, fmt.Errorf("append key: %w", err)
	}
	return nk, nil
}

// RevokeKeys marks as revoked at now the key keyID of callerID in the keys
// file at path, or every key of callerID in force when keyID is "", and
// returns the ids of the keys it revoked. A running server refuses them
// once it reloads the file. The file is written as AppendKey writes it.
// RevokeKeys returns an error, and leaves the file alone, if the file has
// problems (its *LoadError), callerID has no entry, it has no key keyID,
// that key is already revoked, or (keyID "") none of its keys is in force.
func RevokeKeys(path, callerID, keyID string, now time.Time) ([]string, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("revoke keys: %w", err)
	}
	ed, err := openKeysEdit(path, "revoke keys")
	if err != nil {
		return nil, err
	}
	entry := ed.entry(callerID)
	if entry == nil {
		return nil, fmt.Errorf("revoke keys: no caller %q in %s", callerID, path)
	}
	_, list := yamlnode.Lookup(entry, "keys")
	var revoked, ids []string
	for _, item := range yamlnode.Resolve(list).Content {
		item = yamlnode.Resolve(item)
		_, idNode := yamlnode.Lookup(item, "id")
		id := yamlnode.Resolve(idNode).Value
		ids = append(ids, id)
		if keyID != "" && id != keyID {
			continue
		}
		if _, at := yamlnode.Lookup(item, "revoked"); at != nil {
			if keyID != "" {
				return nil, fmt.Errorf("revoke keys: key %q of caller %q was already revoked (at %s)", keyID, callerID, yamlnode.Resolve(at).Value)
			}
			continue
		}
		item.Content = append(item.Content, strNode("revoked"), timeNode(now))
		revoked = append(revoked, id)
	}
	switch {
	case keyID != "" && len(revoked) == 0:
		return nil, fmt.Errorf("revoke keys: caller %q has no key %q (its keys: %s)", callerID, keyID, strings.Join(ids, ", "))
	case len(revoked) == 0:
		return nil, fmt.Errorf("revoke keys: caller %q has no key in force", callerID)
	}
	err = ed.write(func(ks *Keys) error {
		for _, k := range ks.byHash {
			if k.CallerID == callerID && slices.Contains(revoked, k.ID) && k.Revoked.IsZero() {
				return fmt.Errorf("key %q would still be in force", k.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("revoke keys: %w", err)
	}
	return revoked, nil
}

// keysEdit is a keys file being changed, as a YAML document, so that its
// comments and layout survive.
type keysEdit struct {
	path string
	op   string // the operation, for messages
	doc  yaml.Node
	list *yaml.Node // the "keys" list
	ks   *Keys      // the file as it was
}

// openKeysEdit reads the keys file at path, which may be missing or empty,
// to change it, in version 2 of the format. It returns the file's
// *LoadError if it has problems.
func openKeysEdit(path, op string) (*keysEdit, error) {
	ed := &keysEdit{path: path, op: op}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		ed.list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		ed.doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{
			mapNode("version", intNode(Version2), "keys", ed.list),
		}}
		ed.ks = &Keys{byHash: map[[32]byte]Key{}, callers: map[string]struct{}{}, version: Version2}
		return ed, nil
	}
	if ed.ks, err = parseKeys(path, data); err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(data, &ed.doc); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	root := yamlnode.Resolve(ed.doc.Content[0])
	_, ed.list = yamlnode.Lookup(root, "keys")
	if ed.list = yamlnode.Resolve(ed.list); ed.list.Kind != yaml.SequenceNode { // "keys:" with no value
		*ed.list = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	}
	ed.list.Style = 0 // an empty "[]" list becomes a block list
	if ed.ks.version == Version1 {
		ed.upgrade(root)
	}
	return ed, nil
}

// upgrade converts a version 1 document to version 2: "version: 2" at the
// top, and each entry's hash into a keys list of one key, with the id it
// had (KeyIDOf its hash).
func (ed *keysEdit) upgrade(root *yaml.Node) {
	version := strNode("version")
	if len(root.Content) > 0 { // the file's head comment stays at its head
		version.HeadComment, root.Content[0].HeadComment = root.Content[0].HeadComment, ""
	}
	root.Content = append([]*yaml.Node{version, intNode(Version2)}, root.Content...)
	for _, item := range ed.list.Content {
		entry := yamlnode.Resolve(item)
		for i := 0; i+1 < len(entry.Content); i += 2 {
			if yamlnode.Resolve(entry.Content[i]).Value != "hash" {
				continue
			}
			val := entry.Content[i+1]
			h, _ := parseHash(yamlnode.Resolve(val).Value) // parseKeys checked it
			entry.Content[i] = strNode("keys")
			entry.Content[i+1] = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{
				mapNode("id", strNode(KeyIDOf(h)), "hash", val),
			}}
		}
	}
}

// entry returns the entry of callerID, nil if there is none.
func (ed *keysEdit) entry(callerID string) *yaml.Node {
	for _, item := range ed.list.Content {
		entry := yamlnode.Resolve(item)
		if _, id := yamlnode.Lookup(entry, "id"); id != nil && yamlnode.Resolve(id).Value == callerID {
			return entry
		}
	}
	return nil
}

// tiers returns the tiers of callerID as the file had them.
func (ed *keysEdit) tiers(callerID string) []string {
	for _, k := range ed.ks.byHash {
		if k.CallerID == callerID {
			return k.Tiers
		}
	}
	return nil
}

// write checks the changed document (it must load, and pass check) and
// replaces the file with it, so that a bug here cannot break the file.
func (ed *keysEdit) write(check func(*Keys) error) error {
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&ed.doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	ks, err := parseKeys(ed.path, out.Bytes())
	if err != nil {
		return fmt.Errorf("the new file would not load: %w", err)
	}
	if ks.version != Version2 || ks.entries < ed.ks.entries {
		return fmt.Errorf("the new file would be version %d with %d entries", ks.version, ks.entries)
	}
	if err := check(ks); err != nil {
		return fmt.Errorf("the new file is wrong: %w", err)
	}
	return writeFileAtomic(ed.path, out.Bytes())
}

func strNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func intNode(n int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(n)}
}

// timeNode is t in UTC to the second, unquoted.
func timeNode(t time.Time) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!timestamp", Value: t.UTC().Format(time.RFC3339)}
}

// mapNode makes a mapping of key, value pairs.
func mapNode(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content, strNode(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}

// writeFileAtomic replaces the file at path by data, through a temporary
// file in the same directory and a rename. A file that exists keeps its
// owner, its group and its owner's and group's permissions, and loses any
// for others: the server may read it through its group (the systemd unit
// installs it 0640 root:a2ad), and a rewrite by root that made it 0600
// root:root would leave every later reload unable to read it and a revoked
// key in force. A new file is 0600.
func writeFileAtomic(path string, data []byte) (err error) {
	mode := os.FileMode(0o600)
	old, err := os.Stat(path)
	if err == nil {
		mode = old.Mode().Perm() &^ 0o007
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if err := f.Chmod(mode); err != nil {
		_ = f.Close()
		return err
	}
	if old != nil {
		if err := keepOwner(f, old); err != nil {
			_ = f.Close()
			return fmt.Errorf("keep the owner and group of %s: %w (run as root, or as its owner)", path, err)
		}
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	// Make the rename durable; not every platform can sync a directory.
	_ = syncdir.Sync(dir)
	return nil
}
