package tools

import (
	"cmp"
	"slices"
	"strings"
)

// minSecretLen is the shortest value treated as a secret: shorter values ("1", "true") would
// redact ordinary words out of every result.
const minSecretLen = 8

// Secrets are the secret values spool knows: the provider keys the config names and every
// environment variable whose name says it holds a secret. Tools keep them out of what they
// return, so no key reaches a transcript, the search index or the next request (what a command
// may see of spool's environment is CommandEnviron's allow-list). The zero value and nil know
// no secret.
type Secrets struct {
	values []secretValue // longest first, so a key that contains another is redacted whole
}

type secretValue struct{ name, value string }

// NewSecrets collects the secrets of environ (KEY=VALUE entries, as os.Environ gives): the
// variables named in keyEnvs (the configured api_key_env names, secret whatever they are called)
// and every variable IsSecretName recognises.
func NewSecrets(environ []string, keyEnvs ...string) *Secrets {
	s := &Secrets{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !(slices.Contains(keyEnvs, name) || IsSecretName(name)) {
			continue
		}
		if len(value) >= minSecretLen {
			s.values = append(s.values, secretValue{name, value})
		}
	}
	slices.SortFunc(s.values, func(a, b secretValue) int {
		return cmp.Or(len(b.value)-len(a.value), strings.Compare(a.name, b.name))
	})
	return s
}

// secretWords are the name parts that mark a variable as a secret (OPENAI_API_KEY,
// GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, PGPASSWORD, SLACK_SIGNING_SECRET ...).
var secretWords = []string{"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL", "CREDENTIALS", "PAT", "AUTH"}

// harmlessNames look like secrets by their words but hold none (a socket path, a file name).
var harmlessNames = map[string]bool{"SSH_AUTH_SOCK": true, "GPG_AGENT_INFO": true, "XAUTHORITY": true, "KEYTIMEOUT": true}

// IsSecretName reports whether an environment variable's name says it holds a secret: one of its
// underscore-separated words is KEY, TOKEN, SECRET, PASSWORD, ... or it ends in one of them
// (PGPASSWORD, GH_APIKEY).
func IsSecretName(name string) bool {
	up := strings.ToUpper(name)
	if harmlessNames[up] {
		return false
	}
	for _, w := range strings.Split(up, "_") {
		if slices.Contains(secretWords, w) {
			return true
		}
	}
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD"} {
		if strings.HasSuffix(up, w) {
			return true
		}
	}
	return false
}

// Redact replaces every known secret value in text with [redacted NAME].
func (s *Secrets) Redact(text string) string {
	if s == nil {
		return text
	}
	for _, v := range s.values {
		if strings.Contains(text, v.value) {
			text = strings.ReplaceAll(text, v.value, "[redacted "+v.name+"]")
		}
	}
	return text
}

// BaseEnv are the environment variables every program a tool starts may see (a terminal
// command, an MCP server): nothing else of spool's environment reaches it unless the config names
// it (tools.env). A name ending in * stands for every name with that prefix.
var BaseEnv = []string{"PATH", "HOME", "LANG", "LC_*", "TERM", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ"}

// CommandEnviron returns the entries of environ (KEY=VALUE, as os.Environ gives) that a program a
// tool starts may see: those BaseEnv or pass names (a name ending in * is a prefix). Everything
// else stays in spool: provider keys, database URLs, platform tokens, whatever their names. The
// result is never nil, even when nothing is allowed.
func CommandEnviron(environ, pass []string) []string {
	allowed := func(name string) bool {
		for _, list := range [][]string{BaseEnv, pass} {
			for _, p := range list {
				if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(name, prefix) || p == name {
					return true
				}
			}
		}
		return false
	}
	// Never nil: an exec.Cmd with a nil Env inherits all of spool's environment.
	out := []string{}
	for _, kv := range environ {
		if name, _, ok := strings.Cut(kv, "="); ok && name != "" && allowed(name) {
			out = append(out, kv)
		}
	}
	return out
}
