package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// NewAgentToken returns a new agent credential (32 random bytes, hex) and
// HashAgentToken of it. The credential is shown once, when it is made;
// only the hash is stored.
func NewAgentToken() (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("generate agent token: %w", err)
	}
	token = hex.EncodeToString(b)
	return token, HashAgentToken(token), nil
}

// HashAgentToken is what the store keeps of an agent credential, and what
// an agent is looked up by: SHA-256, hex. A fast hash is enough: the
// credential is 256 random bits, not a password to guess.
func HashAgentToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
