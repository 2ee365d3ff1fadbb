package auth

import (
	"regexp"
	"testing"
)

func TestAgentTokens(t *testing.T) {
	// SHA-256 of "abc" (FIPS 180-2, appendix B.1).
	if got, want := HashAgentToken("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Fatalf("HashAgentToken(abc) = %s, want %s", got, want)
	}
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	seen := map[string]bool{}
	for range 3 {
		token, hash, err := NewAgentToken()
		if err != nil {
			t.Fatal(err)
		}
		if !hex64.MatchString(token) || hash != HashAgentToken(token) || seen[token] {
			t.Fatalf("NewAgentToken = %q, %q (repeated: %v)", token, hash, seen[token])
		}
		seen[token] = true
	}
}
