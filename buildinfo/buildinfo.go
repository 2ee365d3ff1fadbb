// Package buildinfo says which svcbridge this is: the release a build
// was stamped with, else what the Go toolchain recorded in the binary (the
// module version when it was built from a tagged module, else the VCS
// revision it was built from).
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// release is the version a release build is stamped with (the image's
// VERSION build argument, by default the chart's appVersion):
// go build -ldflags "-X svcbridge/buildinfo.release=1.2.3".
var release string

// Version is svcbridge's version: the stamped release, "v1.2.3" for a
// build of a tagged module, "devel+<revision>[-dirty]" for a build from a
// checkout, "devel" when the binary records none of these (go test, go run
// outside a checkout).
var Version = sync.OnceValue(func() string {
	bi, _ := debug.ReadBuildInfo()
	return version(release, bi)
})

func version(release string, bi *debug.BuildInfo) string {
	if release != "" {
		return release
	}
	if bi == nil {
		return "devel"
	}
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
