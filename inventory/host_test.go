package inventory

import (
	"strings"
	"testing"
)

func TestIsHostOrIP(t *testing.T) {
	for in, want := range map[string]bool{
		"hub.example.com": true, "h": true, "10.0.0.5": true, "2001:db8::1": true,
		strings.Repeat("h.", 126) + "h": true,
		"":                              false, "Hub.example.com": false, "h_b": false, "h:80": false, "a b": false,
		"a\r\nb": false, "a\x00": false, "fe80::1%eth0": false, "-h": false, "h.": false,
		strings.Repeat("h.", 127):                false,
		strings.Repeat("a", 63) + ".example.com": true, strings.Repeat("a", 64) + ".example.com": false,
		"hub." + strings.Repeat("b", 64): false, strings.Repeat(strings.Repeat("c", 63)+".", 3) + strings.Repeat("d", 61): true,
		"hub\u200b.example.com": false, "hub.example.com\u202e": false,
	} {
		if got := IsHostOrIP(in); got != want {
			t.Errorf("IsHostOrIP(%q) = %v, want %v", in, got, want)
		}
	}
}
