package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at release time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func versionString() string {
	s := fmt.Sprintf("vramlint %s (%s, %s/%s)", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, kv := range info.Settings {
			if kv.Key == "vcs.revision" && len(kv.Value) >= 12 {
				s += " commit " + kv.Value[:12]
			}
		}
	}
	return s
}
