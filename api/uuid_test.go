package api

import "svcbridge/inventory"

// isCanonicalUUID is the tests' check of the uuids the API answers.
func isCanonicalUUID(s string) bool { return inventory.IsUUID(s) }
