package recall

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spoolhq/spool/store"
)

// Bounds of detail=summary.
const (
	// SummaryInputChars bounds the excerpt of one session a summary is written from.
	SummaryInputChars = 100_000
	// SummaryOutputChars bounds one summary as returned (a longer answer is cut).
	SummaryOutputChars = 3_000
	// SummaryMaxTokens is the output budget a Summarizer should ask its model for.
	SummaryMaxTokens = 800
	// summaryMessageChars bounds one message inside an excerpt.
	summaryMessageChars = 6_000
)

// Summarizer writes detail=summary's per-session summaries. It calls a model (the auxiliary
// compression model, else the main one) and records the call's cost on the calling session;
// recall itself writes nothing. current is the calling session, prompt the whole bounded request.
type Summarizer interface {
	SummarizeRecall(ctx context.Context, current, prompt string) (string, error)
}

// summarize replaces each discover result's raw messages with a summary of the session's part
// around its match, written for the query. Without a summarizer, or for a result whose summary
// fails, the raw result stays and a note says why.
func summarize(ctx context.Context, st Store, sum Summarizer, req Request, out *Discovery) {
	if sum == nil {
		out.Note = "detail=summary is unavailable (no summarizer model is configured); these are the raw matches."
		return
	}
	failed := 0
	for i := range out.Results {
		r := &out.Results[i]
		prompt, span, err := summaryPrompt(ctx, st, req.Query, *r)
		if err == nil {
			var text string
			text, err = sum.SummarizeRecall(ctx, req.Current, prompt)
			if err == nil && strings.TrimSpace(text) == "" {
				err = fmt.Errorf("the model returned an empty summary")
			}
			if err == nil {
				r.Detail = "summary"
				r.Summary = clip(strings.TrimSpace(text), SummaryOutputChars)
				r.SummarySpan = span
				r.Messages, r.BookendStart, r.BookendEnd = []Message{}, []Message{}, []Message{}
				continue
			}
		}
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		failed++
		r.SummaryError = oneLine(err.Error())
	}
	switch {
	case failed == len(out.Results) && failed > 0:
		out.Note = "detail=summary failed; these are the raw matches (see summary_error)."
	case failed > 0:
		out.Note = fmt.Sprintf("%d of %d summaries failed; those results show raw matches (see summary_error).", failed, len(out.Results))
	case len(out.Results) > 0:
		out.Note = "Each result is a summary of its session around the match, written for the query; " +
			"cited [mN] are message ids: pass session_id and around_message_id to read the originals."
	}
}

// summaryPrompt is the summary request for one result: the question and the session's messages
// around the match (the whole session when it fits), each tagged with its id, within
// SummaryInputChars. span is the first and last message id the excerpt covers.
func summaryPrompt(ctx context.Context, st Store, question string, r Result) (string, []int64, error) {
	ms, err := st.Conversation(ctx, r.SessionID, store.ViewDisplay)
	if err != nil {
		return "", nil, err
	}
	ms = slices.DeleteFunc(ms, func(m store.Message) bool { return m.Role == store.RoleSystem })
	if len(ms) == 0 {
		return "", nil, fmt.Errorf("session %s has no messages", r.SessionID)
	}
	lines := make([]string, len(ms))
	for i, m := range ms {
		lines[i] = excerptLine(m)
	}
	anchor := 0
	if r.MatchMessageID != 0 {
		if i := slices.IndexFunc(ms, func(m store.Message) bool { return m.ID == r.MatchMessageID }); i >= 0 {
			anchor = i
		}
	}
	// Grow the window around the anchor, one message on each side in turn, while it fits.
	lo, hi := anchor, anchor+1
	size := len(lines[anchor])
	for lo > 0 || hi < len(lines) {
		grew := false
		if hi < len(lines) && size+len(lines[hi]) <= SummaryInputChars {
			size += len(lines[hi])
			hi++
			grew = true
		}
		if lo > 0 && size+len(lines[lo-1]) <= SummaryInputChars {
			size += len(lines[lo-1])
			lo--
			grew = true
		}
		if !grew {
			break
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You are given an excerpt of an earlier conversation (session %s", r.SessionID)
	if r.Title != "" {
		fmt.Fprintf(&b, ", %q", r.Title)
	}
	b.WriteString(") and a question about it. Write a focused summary of what the excerpt says about the " +
		"question: decisions, facts, identifiers, file paths, commands and their outcomes, and what was left open. " +
		"Cite the message ids of the key points as [mN]. If the excerpt does not answer the question, say so. " +
		"At most 300 words; no preamble.\n\nQUESTION: ")
	b.WriteString(question)
	if lo > 0 || hi < len(lines) {
		fmt.Fprintf(&b, "\n\n(The excerpt is messages %d to %d of %d.)", lo+1, hi, len(lines))
	}
	b.WriteString("\n\nTURNS TO SUMMARIZE:\n")
	for _, l := range lines[lo:hi] {
		b.WriteString(l)
	}
	return b.String(), []int64{ms[lo].ID, ms[hi-1].ID}, nil
}

func excerptLine(m store.Message) string {
	role := strings.ToUpper(m.Role)
	if m.Role == store.RoleTool {
		role = "TOOL RESULT"
	}
	text := m.Content
	for _, c := range m.ToolCalls {
		text += "\n" + c.Function.Name + "(" + clip(c.Function.Arguments, 500) + ")"
	}
	return fmt.Sprintf("[%s m%d]: %s\n", role, m.ID, clip(text, summaryMessageChars))
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " [...]"
}
