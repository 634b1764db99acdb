package tools

import (
	"fmt"
	"strings"
)

// Scope is what answering "always" to a request allows for the rest of a session: Key is the
// same for every request the answer covers, Text says which requests those are (for the
// question that offers it).
//
//   - A command with no shell operator, substitution or redirection and no variable assignment
//     in front, whose program is a plain word and whose first argument is a plain word that is
//     not an option, is keyed on those two words: "always" for `git log --oneline` allows every
//     `git log …` command of that kind, never `git push`, never `git log; touch f`.
//   - Any other command (`ls -la && echo done`, `ls >/dev/null`, `ls -la`, `eval x`, …) is
//     keyed on its exact text: "always" allows that command string and nothing else.
//   - A file tool's request is keyed on the tool, and on the tool outside the workspace when
//     the path lies outside it; any other tool's (an MCP tool's call, whatever its arguments)
//     on the tool.
func (r ApprovalRequest) Scope() (key, text string) {
	if r.Command != "" && r.Tool == "terminal" {
		if prefix, ok := commandPrefix(r.Command); ok {
			return "terminal:prefix:" + prefix, fmt.Sprintf("%q without operators", prefix+" …")
		}
		return "terminal:exact:" + r.Command, "this exact command"
	}
	if r.Outside {
		return r.Tool + ":outside", r.Tool + " outside the workspace"
	}
	return r.Tool, r.Tool
}

// commandPrefix returns the program and subcommand of a simple command ("git log"), or false
// when the command is anything else: one that holds a shell operator (; & | newline),
// grouping, a substitution ($( ), `…`, ${ }, $'…', <( )), a redirection (< >), starts with a
// variable assignment or a program that runs its arguments as a command (eval, env, sudo,
// xargs, timeout, …), or whose first argument is an option or not a plain word.
func commandPrefix(command string) (string, bool) {
	for i, c := range command {
		switch {
		case strings.ContainsRune(";&|<>()`\\", c), c < ' ' && c != '\t', c == 0x7f:
			return "", false
		case c == '$':
			// $NAME is a variable's value, one or more words; $( ${ $[ $' $" and the rest are
			// substitutions, quotings that can spell an operator, or special parameters.
			if next := command[i+1:]; next == "" || !(next[0] == '_' || isLetter(next[0])) {
				return "", false
			}
		}
	}
	// Words as the shell splits them: on blanks only (bash does not split on other spaces).
	words := strings.FieldsFunc(command, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(words) < 2 || !plainWord(words[0]) || !plainWord(words[1]) || words[1][0] == '-' || runsCommands[words[0]] {
		return "", false
	}
	return words[0] + " " + words[1], true
}

// runsCommands are programs (and shell keywords) whose arguments hold another command: a prefix
// of two words says nothing about what they run (`timeout 5 …`, `find . -exec …`, `ssh host …`).
var runsCommands = map[string]bool{
	"eval": true, "exec": true, "command": true, "builtin": true, "source": true, ".": true,
	"env": true, "sudo": true, "doas": true, "su": true, "xargs": true, "time": true, "nice": true,
	"nohup": true, "timeout": true, "watch": true, "strace": true, "ltrace": true, "setsid": true,
	"stdbuf": true, "unbuffer": true, "chroot": true, "flock": true, "ionice": true, "taskset": true,
	"find": true, "ssh": true, "trap": true, "coproc": true, "function": true,
	"if": true, "for": true, "while": true, "until": true, "case": true, "select": true,
}

// plainWord is a word the shell leaves as it is: ASCII letters, digits and _ . / + - : @ ,
// (no quotes, globs, braces, tildes, variables, escapes or the = of an assignment).
func plainWord(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if !(isLetter(c) || c >= '0' && c <= '9' || strings.IndexByte("_./+-:@,", c) >= 0) {
			return false
		}
	}
	return w != ""
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
