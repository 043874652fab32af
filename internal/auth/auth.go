// Package auth makes and checks API tokens. Tokens are random, shown to
// their owner once, and stored only as SHA-256 hashes: a leaked database
// does not leak usable tokens. (A slow hash is unnecessary for 256-bit
// random secrets, and a fast one keeps every request cheap.)
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// TokenPrefix marks npugrade tokens so that secret scanners can find them.
const TokenPrefix = "npg_"

// NewToken returns a fresh random token.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return TokenPrefix + hex.EncodeToString(b), nil
}

// HashToken returns the stored form of a token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// RandomID returns n random bytes as hex (submission ids, lease tokens).
func RandomID(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("auth: crypto/rand failed: %v", err)) // the OS RNG does not fail on Linux
	}
	return hex.EncodeToString(b)
}
