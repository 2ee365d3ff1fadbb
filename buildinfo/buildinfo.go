// Package buildinfo says which svcbridge this is: the release a build
// was stamped with, else what the Go toolchain recorded in the binary (the
// module version when it was built from a tagged module, else the VCS
// revision it was built from), else, under `go run`, the revision of the
// checkout it was built from.
package buildinfo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// release is the version a release build is stamped with (the image's
// VERSION build argument, by default the chart's appVersion):
// go build -ldflags "-X svcbridge/buildinfo.release=1.2.3".
var release string

// Version is svcbridge's version: the stamped release, "v1.2.3" for a
// build of a tagged module (or of a clean checkout at that tag),
// "devel+<revision>[-dirty]" for a build from a checkout (go build and go
// install record the revision; under go run, which records none, it is
// the checkout's, see goRunCheckout), "devel" when none of these is
// known (go test, a build with -buildvcs=false or -trimpath).
var Version = sync.OnceValue(func() string {
	bi, _ := debug.ReadBuildInfo()
	return version(release, bi, goRunCheckout)
})

// pseudoVersion matches the version the go command (1.24 on) gives the
// main module of a checkout not at a tag: v0.0.0-20260105100000-0123456789ab,
// with +dirty when the tree had changes.
var pseudoVersion = regexp.MustCompile(`[-.]\d{14}-[0-9a-f]{12}(\+.*)?$`)

// version is Version from the stamped release and the binary's build info;
// checkout is asked only when the build info records no revision.
func version(release string, bi *debug.BuildInfo, checkout func() (rev string, modified bool)) string {
	if release != "" {
		return release
	}
	if bi == nil {
		return "devel"
	}
	v := bi.Main.Version
	if v == "(devel)" {
		v = ""
	}
	if v != "" && !pseudoVersion.MatchString(v) && !strings.HasSuffix(v, "+dirty") {
		return v // a tagged module, or a clean checkout at its tag
	}
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" && v != "" {
		return v // a pseudo-version without VCS settings names its revision
	}
	if rev == "" {
		rev, modified = checkout()
	}
	if rev == "" {
		return "devel"
	}
	v = "devel+" + rev[:min(12, len(rev))]
	if modified {
		v += "-dirty"
	}
	return v
}

// goRunExe matches the path of a binary the go command built and runs
// itself, as go run does: in its work directory
// ($GOTMPDIR/go-build123/b001/exe/svcbridge) or, from Go 1.24 on, in the
// build cache ($GOCACHE/3f/3f…-d/svcbridge).
var goRunExe = regexp.MustCompile(`(/go-build\d+/b\d+/exe|/[0-9a-f]{2}/[0-9a-f]{64}-d)/[^/]+$`)

// goRunCheckout is the revision of the checkout `go run` built this binary
// from, read as `go build` reads it to record it (go run records none:
// `go help build`, -buildvcs). go run builds from the checkout at that
// moment, so its revision now is the build's. Any other binary that
// records none may be older than the checkout: it has no revision ("").
// The checkout is where this file was compiled from (a -trimpath build
// has no such path), its module root one directory up.
func goRunCheckout() (rev string, modified bool) {
	exe, err := os.Executable()
	if err != nil || !goRunExe.MatchString(filepath.ToSlash(exe)) {
		return "", false
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", false
	}
	root := filepath.Dir(filepath.Dir(file))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", false
	}
	return gitRevision(root)
}

// gitRevision is the commit checked out in dir and whether the tree has
// changes, asked as the go command asks when it stamps a build (so an
// untracked file makes it modified too); "" when git cannot say.
func gitRevision(dir string) (rev string, modified bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
		// A status must not take the index's lock from a git command the
		// user runs meanwhile.
		cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	status, err := git("status", "--porcelain")
	if err != nil {
		return "", false
	}
	rev, err = git("-c", "log.showsignature=false", "log", "-1", "--format=%H")
	if err != nil {
		return "", false // no commit yet
	}
	return rev, status != ""
}

// IofogAPIVersion is the version of the ioFog controller API that svcbridge
// implements: the reference controller's release whose routes and shapes it
// follows (Datasance Controller v3.7.3). GET /api/v3/status reports it as
// versions.controller, since ioFog clients gate features on that value:
// potctl refuses a controller whose version is not N.N.N with a major of at
// least 2, and the Go SDK lists all microservices in one call only from
// 2.0.2 on.
const IofogAPIVersion = "3.7.3"
