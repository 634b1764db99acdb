package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// NewSessionID returns a sortable, human-typable id such as 20261129_154233_a3f9c1. Its 24
// random bits make two ids of one second collide at about n²/2²⁵ for n sessions in that second
// (a few percent at 1,000 a second): a backend creating a session under a generated id draws it
// with FreshSessionID, never by ensuring the id.
func NewSessionID(t time.Time) string {
	var b [3]byte
	_, _ = (*idSource.Load())(b[:])
	return t.UTC().Format("20060102_150405") + "_" + hex.EncodeToString(b[:])
}

// NewChildSessionID is NewSessionID for a child of parentID, never parentID itself; the backend
// still draws the id again with FreshSessionID in the transaction that creates the child.
func NewChildSessionID(t time.Time, parentID string) string {
	id := NewSessionID(t)
	for i := 0; id == parentID && i < 64; i++ {
		id = NewSessionID(t)
	}
	return id
}

// idSource is NewSessionID's random source.
var idSource atomic.Pointer[func([]byte) (int, error)]

func init() {
	read := rand.Read
	idSource.Store(&read)
}

// SetSessionIDSource replaces the random source of generated session ids until restore is
// called. It is for tests that make generated ids collide (store/storetest's GeneratedIDs), run
// while nothing else creates sessions.
func SetSessionIDSource(read func([]byte) (int, error)) (restore func()) {
	old := idSource.Swap(&read)
	return func() { idSource.Store(old) }
}

// FreshSessionID draws ids for a session started at t until exists says one is not taken (in
// the transaction that then creates it). CreateSession ensures an id it is given (an existing
// session is returned unchanged), so a generated id that collided with an existing session
// would hand that session to a second caller: two gateway keys, two chats, one conversation.
func FreshSessionID(t time.Time, exists func(id string) (bool, error)) (string, error) {
	for range 64 {
		id := NewSessionID(t)
		taken, err := exists(id)
		if err != nil || !taken {
			return id, err
		}
	}
	return "", fmt.Errorf("no free session id for %s after 64 draws: %w", t.UTC().Format("20060102_150405"), ErrBusy)
}

// MaxIDLength bounds a session id, in bytes.
const MaxIDLength = 128

// ValidateID checks a session id wherever one enters the store (created, imported, named as a
// parent): non-empty, at most MaxIDLength bytes of valid UTF-8, and no whitespace (edge or
// inner: a newline would break every listing), control character (NUL included), path
// separator or "..", since ids name files and appear in tables and terminals.
func ValidateID(id string) error {
	switch {
	case id == "":
		return Invalid("id", "empty")
	case len(id) > MaxIDLength:
		return Invalid("id", "%d bytes, the limit is %d", len(id), MaxIDLength)
	case !utf8.ValidString(id):
		return Invalid("id", "%q is not valid UTF-8", id)
	case strings.ContainsAny(id, "/\\") || strings.Contains(id, ".."):
		return Invalid("id", "%q contains a path separator or \"..\"", id)
	case strings.IndexFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || invisible(r) }) >= 0:
		return Invalid("id", "%q contains whitespace or a control character", id)
	}
	return nil
}

// MaxTitleLength bounds a session title, in characters.
const MaxTitleLength = 100

// CleanTitle normalises a title: invalid UTF-8, control, zero-width and bidi characters are
// removed, whitespace runs collapse to one space. An empty result means "no title". A title
// longer than MaxTitleLength is an error, not silently cut.
func CleanTitle(s string) (string, error) {
	s = strings.ToValidUTF8(s, "")
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case invisible(r):
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	t := b.String()
	if n := utf8.RuneCountInString(t); n > MaxTitleLength {
		return "", Invalid("title", "%d characters, the limit is %d", n, MaxTitleLength)
	}
	return t, nil
}

func invisible(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x200b && r <= 0x200f, r >= 0x2028 && r <= 0x202e, r >= 0x2060 && r <= 0x2069,
		r == 0xfeff, r >= 0xfff9 && r <= 0xfffc:
		return true
	}
	return false
}

// CleanText makes s safe to store: invalid UTF-8 (including encoded lone surrogates) becomes
// U+FFFD, so nothing is ever stored half. NUL bytes are kept.
func CleanText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// CleanIdent cleans an identifier (tool call id, tool name, finish reason): as CleanText, and
// control characters become U+FFFD, since no provider sends them and backends may use them as
// separators.
func CleanIdent(s string) string {
	s = CleanText(s)
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

// PrepareMessage validates m and cleans its text fields in place. It is what every backend
// calls before writing a message.
func PrepareMessage(m *Message) error {
	switch m.Role {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
	default:
		return Invalid("role", "%q is not one of system, user, assistant, tool", m.Role)
	}
	m.Content = CleanText(m.Content)
	m.APIContent = CleanText(m.APIContent)
	m.ToolCallID = CleanIdent(m.ToolCallID)
	m.ToolName = CleanIdent(m.ToolName)
	m.Reasoning = CleanText(m.Reasoning)
	m.FinishReason = CleanIdent(m.FinishReason)
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		tc.ID = CleanText(tc.ID)
		tc.Type = CleanText(tc.Type)
		if tc.Type == "" {
			tc.Type = "function"
		}
		tc.Function.Name = CleanText(tc.Function.Name)
		tc.Function.Arguments = CleanText(tc.Function.Arguments)
	}
	if len(m.ReasoningDetails) > 0 && !json.Valid(m.ReasoningDetails) {
		return Invalid("reasoning_details", "not valid JSON")
	}
	if m.Timestamp.IsZero() {
		m.Timestamp = time.Now()
	}
	m.Timestamp = m.Timestamp.Truncate(time.Microsecond)
	return nil
}

// ValidateModelConfig accepts nil or a JSON object.
func ValidateModelConfig(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Invalid("model_config", "must be a JSON object: %v", err)
	}
	return nil
}

// ValidateNewSession checks ns as every backend does before inserting it (ids, relation and
// parent, model config) and cleans its title.
func ValidateNewSession(ns *NewSession) error {
	if err := ValidateID(ns.ID); err != nil {
		return err
	}
	if ns.ParentID != "" {
		if err := ValidateID(ns.ParentID); err != nil {
			return fmt.Errorf("parent: %w", err)
		}
	}
	if !ns.Relation.Valid() {
		return Invalid("relation", "unknown relation %q", ns.Relation)
	}
	if ns.Relation != RelationNone && ns.ParentID == "" {
		return Invalid("relation", "%q needs a parent session", ns.Relation)
	}
	if ns.ParentID == ns.ID {
		return Invalid("parent", "a session cannot be its own parent")
	}
	if err := ValidateModelConfig(ns.ModelConfig); err != nil {
		return err
	}
	t, err := CleanTitle(ns.Title)
	if err != nil {
		return err
	}
	ns.Title = t
	return nil
}
