package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Local is the principal of a gateway without keys: the machine's own user, who also owns the
// sessions the CLI creates (user_id "").
const Local = ""

// HashKey is the form an API key is stored in: lowercase hex sha256.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// principalName is a principal's name: also a directory name under $SPOOL_HOME/principals.
var principalName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// Keys authenticates API keys. Its zero value has no keys (everyone is Local).
type Keys struct {
	hashes [][32]byte
	names  []string
}

// ParseKeys builds Keys from principal → hashes (one or more sha256 hex digests separated by
// commas, optionally prefixed "sha256:").
func ParseKeys(m map[string]string) (Keys, error) {
	var k Keys
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.TrimSpace(name) == "" {
			return Keys{}, fmt.Errorf("serve.keys: a principal name is empty")
		}
		if !principalName.MatchString(name) || name == "local" {
			return Keys{}, fmt.Errorf("serve.keys.%s: a principal name is 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit, and not \"local\"", name)
		}
		for _, h := range strings.Split(m[name], ",") {
			h = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(h)), "sha256:")
			b, err := hex.DecodeString(h)
			if err != nil || len(b) != 32 {
				return Keys{}, fmt.Errorf("serve.keys.%s: not a sha256 hex digest (64 hex digits; `spool serve hash-key` prints one)", name)
			}
			var a [32]byte
			copy(a[:], b)
			k.hashes = append(k.hashes, a)
			k.names = append(k.names, name)
		}
	}
	return k, nil
}

// Enabled reports whether any key is configured.
func (k Keys) Enabled() bool { return len(k.hashes) > 0 }

// Authenticate returns the principal a presented key belongs to. Every stored hash is compared,
// in constant time, whether or not an earlier one matched.
func (k Keys) Authenticate(key string) (string, bool) {
	if key == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(key))
	found := -1
	for i, h := range k.hashes {
		if subtle.ConstantTimeCompare(sum[:], h[:]) == 1 && found < 0 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return k.names[found], true
}
