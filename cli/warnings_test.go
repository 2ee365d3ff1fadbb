package cli

import "testing"

func TestWarningText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`299 - "service a would fail: gone"`, "service a would fail: gone"},
		{`299 - "router \"x\\y\""`, `router "x\y"`},
		{`299 kube-apiserver "text"`, "text"},
		{`299 - "unterminated`, `299 - "unterminated`},
		{"plain words", "plain words"},
	} {
		if got := warningText(tc.in); got != tc.want {
			t.Errorf("warningText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
