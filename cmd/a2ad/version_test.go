package main

import (
	"runtime/debug"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	vcs := func(rev, at, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: at}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "94525f23f1f8fa9be6de5e4cb877bad17f969d3c"
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "dev"},
		{"a tagged module", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"a checkout, stamped by go build", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261124063308-94525f23f1f8+dirty"},
			Settings: vcs(rev, "2026-11-24T06:33:08Z", "true")}, "v0.0.0-20261124063308-94525f23f1f8+dirty"},
		{"a checkout, VCS stamp only", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs(rev, "2026-11-24T06:33:08Z", "false")}, "dev-20261124063308-94525f23f1f8"},
		{"a checkout with changes, VCS stamp only", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: vcs(rev, "2026-11-24T07:33:08+01:00", "true")}, "dev-20261124063308-94525f23f1f8-dirty"},
		{"no checkout, or -buildvcs=false", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	} {
		if got := buildVersion(tc.bi); got != tc.want {
			t.Errorf("%s: buildVersion = %q, want %q", tc.name, got, tc.want)
		}
	}
}
