package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spoolhq/spool/store"
)

const (
	unitSep   = "\x1f"
	recordSep = "\x1e"
)

// MessagesSHA256 is the spec's messages_sha256 (section 2.8) over msgs in order; each message's
// SessionID is the sid field.
func MessagesSHA256(msgs []store.Message) string {
	h := sha256.New()
	var sb strings.Builder
	for _, m := range msgs {
		sb.Reset()
		sb.WriteString(m.SessionID)
		sb.WriteString(unitSep)
		sb.WriteString(m.Role)
		sb.WriteString(unitSep)
		sb.WriteString(m.Content)
		sb.WriteString(unitSep)
		sb.WriteString(m.ToolName)
		sb.WriteString(unitSep)
		sb.WriteString(m.ToolCallID)
		sb.WriteString(unitSep)
		for i, c := range m.ToolCalls {
			if i > 0 {
				sb.WriteString(";")
			}
			sb.WriteString(c.ID + "," + c.Function.Name + "," + c.Function.Arguments)
		}
		sb.WriteString(recordSep)
		h.Write([]byte(sb.String()))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// QueriesSHA256 is the spec's queries_sha256 over qs in order.
func QueriesSHA256(qs []Query) string {
	h := sha256.New()
	for _, q := range qs {
		h.Write([]byte(q.Category + unitSep + q.Text + recordSep))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// MessageStats are the figures section 2.5 quotes for the generated data.
type MessageStats struct {
	Messages               int            `json:"messages"`
	CJKMessages            int            `json:"cjk_messages"`
	Chars                  int            `json:"chars"`
	UTF8Bytes              int            `json:"utf8_bytes"`
	MinChars               int            `json:"min_chars"`
	MaxChars               int            `json:"max_chars"`
	MeanChars              float64        `json:"mean_chars"`
	Roles                  map[string]int `json:"roles"`
	AssistantWithToolCalls int            `json:"assistant_with_tool_calls"`
	ToolCalls              int            `json:"tool_calls"`
}

// Stats computes MessageStats; lengths are in code points and a CJK message is one containing a
// Han ideograph.
func Stats(msgs []store.Message) MessageStats {
	st := MessageStats{Messages: len(msgs), Roles: map[string]int{}}
	for i, m := range msgs {
		n := utf8.RuneCountInString(m.Content)
		st.Chars += n
		st.UTF8Bytes += len(m.Content)
		if i == 0 || n < st.MinChars {
			st.MinChars = n
		}
		if n > st.MaxChars {
			st.MaxChars = n
		}
		if strings.IndexFunc(m.Content, func(r rune) bool { return unicode.Is(unicode.Han, r) }) >= 0 {
			st.CJKMessages++
		}
		st.Roles[m.Role]++
		if len(m.ToolCalls) > 0 {
			st.AssistantWithToolCalls++
			st.ToolCalls += len(m.ToolCalls)
		}
	}
	if len(msgs) > 0 {
		st.MeanChars = round3(float64(st.Chars) / float64(len(msgs)))
	}
	return st
}
