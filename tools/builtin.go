package tools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/spoolhq/spool/recall"
)

// Builtins returns every built-in tool.
func Builtins() []Tool {
	return []Tool{ReadFile(), WriteFile(), EditFile(), ListFiles(), SearchFiles(), Terminal(), Memory(), SessionSearch()}
}

// Default returns a registry of the built-in tools.
func Default() *Registry {
	r, err := New(Builtins()...)
	if err != nil {
		panic("tools: built-in registry: " + err.Error()) // a programming error, caught by the tests
	}
	return r
}

// SessionSearch searches and reads past sessions through package recall.
func SessionSearch() Tool {
	return Tool{
		Name: "session_search",
		Description: "Search and read earlier conversations, including parts of this session that were " +
			"compacted out of your context. With query: find sessions about it (the top result shows the " +
			"messages around the match). A query can be a few distinctive words (names, files, errors, " +
			"identifiers) or the question itself in plain words: a result needs only some of the words, and " +
			"results holding more and rarer of them, exact phrases and identifiers come first; word forms meet " +
			"(tested finds testing). Each result's matched_terms says which words it holds. If nothing is found, " +
			"search again wider (other words, synonyms, fewer words) before concluding. With session_id and around_message_id: scroll the messages around " +
			"that message. With session_id alone: read that session. With no arguments: list recent sessions. " +
			"Returns JSON.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"query":{"type":"string","description":"A few distinctive words, or the question in plain words. Quote exact phrases; AND, OR, NOT (upper case) and prefix* mean what they say."},
			"session_id":{"type":"string","description":"A session_id from an earlier result, to read or scroll it."},
			"around_message_id":{"type":"integer","description":"With session_id: the message to centre on (match_message_id or a message id)."},
			"limit":{"type":"integer","description":"How many sessions to return (default 3, at most 10)."},
			"window":{"type":"integer","description":"Messages on each side of a match or anchor (default 5, at most 20)."},
			"role_filter":{"type":"string","description":"Comma-separated roles to search (default \"user,assistant\"; add \"tool\" for tool output)."},
			"sort":{"type":"string","enum":["relevance","newest","oldest"],"description":"Order of matches (default relevance)."},
			"subagents":{"type":"boolean","description":"With query: also search sub-agent sessions (delegations), left out by default. Reading one by session_id always works."},
			"detail":{"type":"string","enum":["adaptive","full","summary"],"description":"full expands every result, not only the top one; summary returns a short summary of each result's session around the match, written for the query (with message ids to scroll to)."}
		},"additionalProperties":false}`),
		// recall bounds its own answers; the cap only guards against a bug, since cutting JSON
		// would leave the model unparseable text.
		MaxOutput: 64 * 1024,
		Run: func(ctx context.Context, env Env, args json.RawMessage) (string, error) {
			if env.Store == nil {
				return "", errors.New("session search is unavailable: no session store")
			}
			return string(recall.RunDetail(ctx, env.Store, env.SessionID, args, env.RecallDetail, env.Summarizer)), nil
		},
	}
}
