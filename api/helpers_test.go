package api

import (
	"svcbridge/auth"
	"svcbridge/inventory"
)

// Shorthands of the tests.

// isCanonicalUUID checks the uuids the API answers.
func isCanonicalUUID(s string) bool { return inventory.IsUUID(s) }

// hashToken is what the store keeps of an agent's credential.
func hashToken(token string) string { return auth.HashAgentToken(token) }
