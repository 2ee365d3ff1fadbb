package inventory

import (
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation"
)

// IsHostOrIP accepts what a router can dial: a DNS-1123 subdomain, or an
// IPv4/IPv6 address without a zone (a zone is local to one host and
// meaningless to a router elsewhere).
func IsHostOrIP(s string) bool {
	if addr, err := netip.ParseAddr(s); err == nil {
		return addr.Zone() == ""
	}
	return len(validation.IsDNS1123Subdomain(s)) == 0
}
