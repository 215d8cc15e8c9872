package cli

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseFlags: an unknown flag is one short *FlagError with a guess
// and two dashes; --help prints the flags and returns flag.ErrHelp.
func TestParseFlags(t *testing.T) {
	fs := flag.NewFlagSet("a2ad x", flag.ContinueOnError)
	fs.String("store", "", "the store")
	err := ParseFlags(fs, []string{"--stor", "a"}, nil, nil)
	var fe *FlagError
	want := "a2ad x: unknown flag --stor (did you mean --store?)\nRun \"a2ad x --help\" for the flags."
	if !errors.As(err, &fe) || err.Error() != want {
		t.Errorf("unknown flag: %v, want %q", err, want)
	}
	var help strings.Builder
	fs = flag.NewFlagSet("a2ad x", flag.ContinueOnError)
	fs.String("store", "", "the store")
	if err := ParseFlags(fs, []string{"-h"}, &help, nil); !errors.Is(err, flag.ErrHelp) ||
		!strings.HasPrefix(help.String(), "Usage of a2ad x:\n  -store string\n") {
		t.Errorf("--help: %v, printed %q", err, help.String())
	}
	if code := Parse(fs, []string{"--nope"}, &help); code != 2 {
		t.Errorf("Parse of a bad flag = %d, want 2", code)
	}
}

// TestList: a list flag takes commas and repeats, and Reset empties it
// for a later source.
func TestList(t *testing.T) {
	var l []string
	f := List{L: &l}
	_ = f.Set("a, b,,")
	_ = f.Set("c")
	if f.String() != "a,b,c" {
		t.Errorf("List = %q, want a,b,c", f.String())
	}
	var r Resetter = f
	r.Reset()
	if len(l) != 0 {
		t.Errorf("after Reset: %q", l)
	}
}

// TestApplyFile: every problem of a settings file, by line, in one error.
func TestApplyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a2ad.yaml")
	if err := os.WriteFile(path, []byte("store: a.db\nnope: 1\nstore: b.db\nlist: [x, y]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("a2ad", flag.ContinueOnError)
	store := fs.String("store", "", "")
	var l []string
	fs.Var(List{L: &l}, "list", "")
	err := ApplyFile(fs, path)
	want := "config file: " + path + ":2: unknown key \"nope\"; " + path + ":3: duplicate key \"store\" (first at line 1)"
	if err == nil || err.Error() != want || *store != "a.db" || strings.Join(l, ",") != "x,y" {
		t.Errorf("ApplyFile = %v (store %q, list %q), want %q", err, *store, l, want)
	}
}
