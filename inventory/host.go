package inventory

import (
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// IsHostOrIP accepts what a router can dial: a DNS name as RFC 1123 has
// it (a DNS-1123 subdomain of at most 253 characters whose every label is
// at most 63, which the subdomain check alone lets pass), or an IPv4/IPv6
// address without a zone (a zone is local to one host and meaningless to
// a router elsewhere).
func IsHostOrIP(s string) bool {
	if addr, err := netip.ParseAddr(s); err == nil {
		return addr.Zone() == ""
	}
	if len(validation.IsDNS1123Subdomain(s)) != 0 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if len(label) > validation.DNS1123LabelMaxLength {
			return false
		}
	}
	return true
}
