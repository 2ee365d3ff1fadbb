// Package buildinfo says which svcbridge this is, from what the Go
// toolchain recorded in the binary: the module version when it was built
// from a tagged module, else the VCS revision it was built from.
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// Version is svcbridge's version: "v1.2.3" for a tagged build,
// "devel+<revision>[-dirty]" for a build from a checkout, "devel" when the
// binary records neither (go test, go run outside a checkout).
var Version = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return fromBuildInfo(bi)
})

func fromBuildInfo(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return "devel+" + rev[:min(12, len(rev))] + dirty
}

// IofogAPIVersion is the version of the ioFog controller API that svcbridge
// implements: the reference controller's release whose routes and shapes it
// follows (Datasance Controller v3.7.3). GET /api/v3/status reports it as
// versions.controller, since ioFog clients gate features on that value:
// potctl refuses a controller whose version is not N.N.N with a major of at
// least 2, and the Go SDK lists all microservices in one call only from
// 2.0.2 on.
const IofogAPIVersion = "3.7.3"
