package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionFromBuildInfo(t *testing.T) {
	// A build from a checkout: the commit and its time from the VCS stamp.
	checkout := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-12-01T02:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	got := describeBuild(checkout).String()
	if !strings.HasPrefix(got, "vramlint "+devVersion+" (commit 0123456789ab+modified, built 2026-12-01T02:00:00Z, go1.") {
		t.Errorf("checkout build: %q", got)
	}
	// `go install .../cmd/vramlint@v1.2.3`: the module version, no VCS stamp.
	installed := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}
	if got := describeBuild(installed).String(); !strings.HasPrefix(got, "vramlint 1.2.3 (go1.") {
		t.Errorf("go install build: %q", got)
	}
	// A release build: what the release script linked in wins.
	defer func(v, c, d string) { version, commit, date = v, c, d }(version, commit, date)
	version, commit, date = "1.0.0", "fedcba9876543210", "2026-12-24T00:00:00Z"
	if got := describeBuild(installed).String(); !strings.HasPrefix(got, "vramlint 1.0.0 (commit fedcba987654, built 2026-12-24T00:00:00Z, go1.") {
		t.Errorf("release build: %q", got)
	}
	if got := describeBuild(nil).String(); !strings.HasPrefix(got, "vramlint 1.0.0 (commit fedcba987654") {
		t.Errorf("no build info: %q", got)
	}
}
