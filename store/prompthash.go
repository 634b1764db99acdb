package store

import (
	"crypto/sha256"
	"encoding/hex"
)

// PromptHash is the content address of a system prompt (sessions.system_prompt_hash): the hex
// sha256 of its text. Every backend stores prompts under it.
func PromptHash(prompt string) string {
	sum := sha256.Sum256([]byte(prompt))
	return hex.EncodeToString(sum[:])
}
