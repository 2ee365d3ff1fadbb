package buildinfo

import (
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	setting := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"tagged module", debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{"tag wins over revision", debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: setting("vcs.revision", rev)}, "v1.4.0"},
		{"checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: setting("vcs.revision", rev, "vcs.modified", "false")}, "devel+0123456789ab"},
		{"dirty checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: setting("vcs.revision", "abc", "vcs.modified", "true")}, "devel+abc-dirty"},
		// What go build (1.24 on) records for a checkout: a pseudo-version
		// besides the revision, which says it better.
		{"checkout, pseudo-version", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260105100000-0123456789ab"}, Settings: setting("vcs.revision", rev, "vcs.modified", "false")}, "devel+0123456789ab"},
		{"dirty checkout, pseudo-version", debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20260105100000-0123456789ab+dirty"}, Settings: setting("vcs.revision", rev, "vcs.modified", "true")}, "devel+0123456789ab-dirty"},
		{"dirty checkout at a tag", debug.BuildInfo{Main: debug.Module{Version: "v0.1.0+dirty"}, Settings: setting("vcs.revision", rev, "vcs.modified", "true")}, "devel+0123456789ab-dirty"},
		{"pseudo-version without VCS settings", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260105100000-0123456789ab"}}, "v0.0.0-20260105100000-0123456789ab"},
		{"nothing recorded", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	} {
		checkout := func() (string, bool) { t.Errorf("%s: the checkout was asked", tc.name); return "", false }
		if tc.name == "nothing recorded" {
			checkout = func() (string, bool) { return "", false }
		}
		if got := version("", &tc.bi, checkout); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	// go run records nothing: the checkout it was built from says.
	nothing := debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
	for _, tc := range []struct {
		modified bool
		want     string
	}{{false, "devel+0123456789ab"}, {true, "devel+0123456789ab-dirty"}} {
		if got := version("", &nothing, func() (string, bool) { return rev, tc.modified }); got != tc.want {
			t.Errorf("go run of a checkout (modified %v): got %q, want %q", tc.modified, got, tc.want)
		}
	}
	// A stamped release wins over everything the toolchain recorded.
	checkout := debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: setting("vcs.revision", "abc")}
	if got := version("1.2.3", &checkout, nil); got != "1.2.3" {
		t.Errorf("stamped 1.2.3: got %q", got)
	}
	if got := version("", nil, nil); got != "devel" {
		t.Errorf("no build info: got %q, want devel", got)
	}
	if Version() == "" {
		t.Error("Version is empty")
	}
}

// TestGoRunExe: the checkout is read only for a binary where go run puts
// it, never for one built elsewhere (which may be older than the checkout)
// or for a test binary.
func TestGoRunExe(t *testing.T) {
	for exe, want := range map[string]bool{
		"/tmp/go-build3792948/b001/exe/svcbridge": true,
		"/root/.cache/go-build/bd/bd9aa88fe91b5104074220a6200235acc5b9d3ed8030a510af9409d0f11fc8bd-d/svcbridge": true,
		"/home/me/go/bin/svcbridge":                     false,
		"/tmp/svcbridge-bin123/svcbridge":               false,
		"/tmp/go-build3792948/b001/buildinfo.test":      false,
		"/root/.cache/go-build/bd/bd9aa88f-d/svcbridge": false,
	} {
		if got := goRunExe.MatchString(exe); got != want {
			t.Errorf("%s: go run's: %v, want %v", exe, got, want)
		}
	}
}

// TestIofogAPIVersion: the version ioFog clients read must pass their
// checks: potctl's N.N.N with a major of at least 2, and the Go SDK's
// (major >= 2, minor >= 0, patch >= 2) for the one-call microservice list.
func TestIofogAPIVersion(t *testing.T) {
	parts := strings.Split(IofogAPIVersion, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not N.N.N", IofogAPIVersion)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || strconv.Itoa(v) != p {
			t.Fatalf("%q: part %q is not a number", IofogAPIVersion, p)
		}
		n[i] = v
	}
	if n[0] < 2 || n[2] < 2 {
		t.Fatalf("%q: potctl needs a major of at least 2, the SDK's microservice list a patch of at least 2", IofogAPIVersion)
	}
}
