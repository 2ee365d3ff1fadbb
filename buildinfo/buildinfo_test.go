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
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"tagged module", debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{"tag wins over revision", debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: setting("vcs.revision", "0123456789abcdef")}, "v1.4.0"},
		{"checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: setting("vcs.revision", "0123456789abcdef01", "vcs.modified", "false")}, "devel+0123456789ab"},
		{"dirty checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: setting("vcs.revision", "abc", "vcs.modified", "true")}, "devel+abc-dirty"},
		{"nothing recorded", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	} {
		if got := version("", &tc.bi); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	// A stamped release wins over everything the toolchain recorded.
	checkout := debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: setting("vcs.revision", "abc")}
	if got := version("1.2.3", &checkout); got != "1.2.3" {
		t.Errorf("stamped 1.2.3: got %q", got)
	}
	if got := version("", nil); got != "devel" {
		t.Errorf("no build info: got %q, want devel", got)
	}
	if Version() == "" {
		t.Error("Version is empty")
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
