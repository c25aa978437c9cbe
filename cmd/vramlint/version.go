package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// devVersion is the version of a build from a checkout.
const devVersion = "0.1.0-dev"

// version, commit and date are set by the release script with -ldflags
// "-X main.version=... -X main.commit=... -X main.date=...". Builds that do
// not set them take what Go's build information has: the module version of
// `go install github.com/vramlint/vramlint/cmd/vramlint@vX.Y.Z`, and the
// commit and its time of a build from a git checkout.
var (
	version = devVersion
	commit  = ""
	date    = ""
)

// buildDescription is what `vramlint version` reports.
type buildDescription struct {
	version, commit, date string
	modified              bool // built from a checkout with uncommitted changes
}

// describeBuild combines the values set at link time with Go's build
// information (nil when the binary has none).
func describeBuild(info *debug.BuildInfo) buildDescription {
	b := buildDescription{version: version, commit: commit, date: date}
	if info == nil {
		return b
	}
	if b.version == devVersion && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.version = strings.TrimPrefix(info.Main.Version, "v")
	}
	for _, kv := range info.Settings {
		switch kv.Key {
		case "vcs.revision":
			if b.commit == "" {
				b.commit = kv.Value
			}
		case "vcs.time":
			if b.date == "" {
				b.date = kv.Value
			}
		case "vcs.modified":
			b.modified = kv.Value == "true"
		}
	}
	return b
}

// String reads "vramlint 0.1.0 (commit 0123456789ab, built
// 2026-12-01T02:00:00Z, go1.26.8, linux/amd64)"; editors read the version
// from its start.
func (b buildDescription) String() string {
	var parts []string
	if b.commit != "" {
		c := b.commit[:min(12, len(b.commit))]
		if b.modified {
			c += "+modified"
		}
		parts = append(parts, "commit "+c)
	}
	if b.date != "" {
		parts = append(parts, "built "+b.date)
	}
	parts = append(parts, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
	return fmt.Sprintf("vramlint %s (%s)", b.version, strings.Join(parts, ", "))
}

func versionString() string {
	info, _ := debug.ReadBuildInfo()
	return describeBuild(info).String()
}
