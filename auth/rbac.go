package auth

import (
	"net/http"
	"slices"
	"strings"
)

// Allowed reports whether role may call method on route (a route template
// such as /api/v3/services/:name). Reading is for every role; changing
// Services is for developers and up; changing the inventory (agents,
// microservices, agent credentials) is for sre and admin. The decision
// never depends on whether the resource exists, so a 403 leaks nothing.
func Allowed(role Role, method, route string) bool {
	need := Viewer
	switch {
	case method == http.MethodGet || method == http.MethodHead:
	case strings.HasPrefix(route, "/api/v3/services"):
		need = Developer
	default:
		need = SRE
	}
	return slices.Index(Roles, role) >= slices.Index(Roles, need)
}
