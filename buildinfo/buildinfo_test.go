package buildinfo

import (
	"runtime/debug"
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
