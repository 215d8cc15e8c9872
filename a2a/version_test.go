package a2a_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/a2ad/a2ad/a2a"
	v1 "github.com/a2ad/a2ad/a2a/v1"
)

func TestParseVersion(t *testing.T) {
	good := []struct {
		in   string
		want a2a.Version
	}{
		{"", a2a.V03},
		{"0.3", a2a.V03},
		{"1.0", a2a.V10},
		{" 1.0 ", a2a.V10},
		{"\t0.3", a2a.V03},
		// A patch number is not considered.
		{"0.3.0", a2a.V03},
		{"1.0.1", a2a.V10},
		{"1.0.0", a2a.V10},
		{"1.0.17", a2a.V10},
	}
	for _, tc := range good {
		v, err := a2a.ParseVersion(tc.in)
		if err != nil || v != tc.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", tc.in, v, err, tc.want)
		}
	}
	for _, bad := range []string{"1", "0", "1.1", "0.2", "2.0", "0.3.x", "1.0.", "1.0.1.2", "v1.0", "1.0-rc1", "01.0", "1.00", ".", "1.0,0.3", "1 .0", "latest"} {
		v, err := a2a.ParseVersion(bad)
		if err == nil {
			t.Errorf("ParseVersion(%q) = %v, nil; want -32009", bad, v)
			continue
		}
		if err.Code != -32009 || err.Message != "Version not supported" {
			t.Errorf("ParseVersion(%q) error = %d %q, want -32009 \"Version not supported\"", bad, err.Code, err.Message)
		}
		if want := map[string]any{"version": bad, "supported": "0.3, 1.0"}; !reflect.DeepEqual(err.Data, want) {
			t.Errorf("ParseVersion(%q) error data = %v, want %v", bad, err.Data, want)
		}
	}
	long := strings.Repeat("9", 100)
	_, err := a2a.ParseVersion(long)
	if err == nil || err.Data["version"] != long[:32] {
		t.Errorf("ParseVersion(100 bytes) data = %v, want the first 32 bytes", err)
	}
	if a2a.ErrVersionNotSupported.Data != nil {
		t.Errorf("ParseVersion modified the sentinel: %v", a2a.ErrVersionNotSupported.Data)
	}
	got := string(v1.AppendError(nil, json.RawMessage(`1`), err))
	if want := `"reason":"VERSION_NOT_SUPPORTED","domain":"a2a-protocol.org","metadata":{"supported":"0.3, 1.0","version":"` + long[:32] + `"}`; !strings.Contains(got, want) {
		t.Errorf("AppendErrorV1(version error) = %s, want it to contain %s", got, want)
	}

	for v, s := range map[a2a.Version]string{a2a.V03: "0.3", a2a.V10: "1.0", 7: "Version(7)", 42: "Version(42)"} {
		if got := v.String(); got != s {
			t.Errorf("Version(%d).String() = %q, want %q", v, got, s)
		}
	}
	var zero a2a.Version
	if zero != a2a.V03 {
		t.Errorf("the zero Version is %v, want 0.3", zero)
	}
	if a2a.VersionHeader != "A2A-Version" {
		t.Errorf("VersionHeader = %q", a2a.VersionHeader)
	}
}

// FuzzParseVersion checks ParseVersion never panics, accepts only what
// names 0.3 or 1.0, and bounds what it echoes.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"", "0.3", "1.0", "1.0.1", " 1.0 ", "1.1", "v1.0", "1.0.", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := a2a.ParseVersion(s)
		if err != nil {
			if err.Code != a2a.CodeVersionNotSupported || len(err.Data["version"].(string)) > 32 {
				t.Fatalf("ParseVersion(%q) error = %+v", s, err)
			}
			if !json.Valid(v1.AppendError(nil, nil, err)) {
				t.Fatalf("ParseVersion(%q): the error does not encode", s)
			}
			return
		}
		trimmed := strings.TrimSpace(s)
		if trimmed != "" && !strings.HasPrefix(trimmed, v.String()) {
			t.Fatalf("ParseVersion(%q) = %v", s, v)
		}
	})
}
