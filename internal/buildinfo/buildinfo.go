// Package buildinfo says which build of npugrade is running, for
// `npugrade --version`, /healthz and the runner registration.
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// version is set at link time by release builds:
//
//	go build -ldflags "-X github.com/npugrade/npugrade/internal/buildinfo.version=v1.2.0" ./cmd/npugrade
var version string

var fromBuild = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "dev+" + rev
})

// Version is the linked-in release version, else the module version or
// VCS revision Go recorded in the binary ("dev+<commit>"), else "dev".
func Version() string {
	if version != "" {
		return version
	}
	return fromBuild()
}
