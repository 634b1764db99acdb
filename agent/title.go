package agent

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spoolhq/spool/store"
)

// TitleConfigKey is the model_config key that records the title spool gave a session on its own.
// A session's title is automatic while it still equals this value; a title the user set (or
// changed) differs from it, and spool never touches it again.
const TitleConfigKey = "auto_title"

// TitleModelKey is the model_config key naming the auxiliary model that made the automatic
// title (absent: spool made it from the first ask).
const TitleModelKey = "auto_title_model"

// titleTimeout bounds the auxiliary model's title call; past it the title comes from the ask.
const titleTimeout = 15 * time.Second

// titlePrompt asks the auxiliary model for a session's name.
const titlePrompt = "Name this conversation in at most 8 words, from its first message below. " +
	"Reply with the name only: no quotes, no final full stop.\n\nThe first message:\n"

// Title limits: a short name, words kept whole.
const (
	titleWords = 8
	titleChars = 60
)

// TitleSource says where a session's title came from: "auto" (spool named it after the first
// exchange), "user" (set or changed by a person or a client), or "" (no title).
func TitleSource(s store.Session) string {
	if s.Title == "" {
		return ""
	}
	var m map[string]json.RawMessage
	var auto string
	if json.Unmarshal(s.ModelConfig, &m) == nil && json.Unmarshal(m[TitleConfigKey], &auto) == nil && auto != "" &&
		(s.Title == auto || strings.HasPrefix(s.Title, auto+" #")) {
		return "auto"
	}
	return "user"
}

// autoTitle names the session after its first exchange, from the first ask, unless it has a
// title already, is a sub-agent's, or was named automatically before (a title the user cleared stays cleared). It
// runs under the turn's lease; the record of the automatic title is saved with the compaction
// state. A failure only costs the title.
func (r *run) autoTitle(ctx context.Context) {
	if r.sess.Title != "" || r.t.Lost() != nil || r.sess.Source == SubagentSource {
		// A sub-agent's session is machinery: its goal would take a name from the unique title
		// space the user resumes by.
		return
	}
	m := map[string]json.RawMessage{}
	if len(r.sess.ModelConfig) > 0 && json.Unmarshal(r.sess.ModelConfig, &m) != nil {
		return
	}
	if _, done := m[TitleConfigKey]; done {
		return
	}
	var ask string
	for _, msg := range r.history {
		if msg.Role == store.RoleUser && !msg.Summary {
			ask = msg.Content
			break
		}
	}
	base, by := "", ""
	if r.a.titler != nil && strings.TrimSpace(ask) != "" {
		if t := r.askTitle(ctx, ask); t != "" {
			base, by = t, r.a.titleModel
		}
	}
	if base == "" {
		base = titleFrom(ask)
	}
	if base == "" {
		return
	}
	title, err := r.a.st.NextTitle(ctx, r.sess.UserID, base)
	if err != nil || r.a.st.SetTitle(ctx, r.sess.ID, title, store.WithFence(r.t.Fence())) != nil {
		return
	}
	raw, _ := json.Marshal(base)
	m[TitleConfigKey] = raw
	if by != "" {
		raw, _ = json.Marshal(by)
		m[TitleModelKey] = raw
	}
	cfg, err := json.Marshal(m)
	if err != nil {
		return
	}
	r.sess.Title, r.sess.ModelConfig, r.stateDirty = title, cfg, true
}

// askTitle asks the auxiliary model for a title and cleans its answer like an ask ("" when the
// call fails or says nothing usable).
func (r *run) askTitle(ctx context.Context, ask string) string {
	if utf8.RuneCountInString(ask) > 2000 {
		ask = string([]rune(ask)[:2000])
	}
	tctx, cancel := context.WithTimeout(ctx, titleTimeout)
	defer cancel()
	answer, err := r.a.titler.Summarize(tctx, r.a.titleModel, titlePrompt+ask)
	if err != nil {
		return ""
	}
	return titleFrom(strings.Trim(strings.TrimSpace(answer), "\"'`*#"))
}

// TitleModel is the auxiliary model that made s's automatic title, "" when spool made it from
// the first ask or the title is not automatic.
func TitleModel(s store.Session) string {
	if TitleSource(s) != "auto" {
		return ""
	}
	var m map[string]json.RawMessage
	var by string
	if json.Unmarshal(s.ModelConfig, &m) == nil {
		_ = json.Unmarshal(m[TitleModelKey], &by)
	}
	return by
}

// titleFrom makes a short title of a first ask: its first line that is not a directive to the
// offline model, at most titleWords words and titleChars characters, words whole, capitalised,
// without trailing punctuation.
func titleFrom(ask string) string {
	line := ""
	for _, l := range strings.Split(ask, "\n") {
		l = strings.TrimSpace(l)
		word, rest, _ := strings.Cut(l, " ")
		switch {
		case l == "":
			continue
		case word == "SAY" || word == "CALL" || word == "FAULT":
			if word == "SAY" && line == "" {
				line = rest
			}
			continue
		}
		line = l
		break
	}
	words := strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, line))
	var b strings.Builder
	for i, w := range words {
		if i == titleWords || utf8.RuneCountInString(b.String())+1+utf8.RuneCountInString(w) > titleChars {
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	t := strings.TrimRightFunc(b.String(), func(r rune) bool { return unicode.IsPunct(r) && r != ')' && r != '"' })
	if r, n := utf8.DecodeRuneInString(t); n > 0 {
		t = string(unicode.ToUpper(r)) + t[n:]
	}
	return t
}
