package web

import (
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/web/markup"
)

// itemsHTML writes transcript items: messages, and spans of archived messages shown on demand.
func (s *Server) itemsHTML(m *markup.Writer, items []item) {
	for _, it := range items {
		if it.Msg != nil {
			s.msgHTML(m, *it.Msg)
			continue
		}
		first, last := it.Archived[0].ID, it.Archived[len(it.Archived)-1].ID
		m.F(`
<details class="archived" data-nav>
<summary>%s archived message%s <small>(compacted away: the model no longer sees them; still searchable) #%s–#%s</small></summary>
`, it.Count, plural(it.Count), first, last)
		for _, a := range it.Archived {
			s.msgHTML(m, a)
		}
		m.Raw("\n</details>")
	}
}

// msgHTML writes one message: a compaction summary, or a message with its tool calls.
func (s *Server) msgHTML(m *markup.Writer, v msgView) {
	if v.Summary {
		s.summaryHTML(m, v)
		return
	}
	m.F(`<article class="msg %s`, v.Role)
	m.If(!v.Active, " arch")
	m.F(`" id="m%s" data-nav>
<header><span class="role">%s`, v.ID, v.Role)
	if v.ToolName != "" {
		m.F(` · %s`, v.ToolName)
	}
	m.F(`</span> <a class="anchor" href="#m%s">#%s</a> <small title="%s">%s</small>
`, v.ID, v.ID, stamp(v.Timestamp), s.rel(v.Timestamp))
	if v.TokenCount != 0 {
		m.F(`<small>%s tok</small>`, num(v.TokenCount))
	}
	if v.FinishReason != "" && v.FinishReason != "stop" {
		m.F(` <small class="finish">%s</small>`, v.FinishReason)
	}
	m.Raw("\n")
	if v.Active {
		m.F(`<form method="post" action="%s" class="branchat"><input type="hidden" name="csrf" value="%s"><input type="hidden" name="at" value="%s"><button type="submit" title="copy the history up to here into a new branch">branch here</button></form>`,
			s.sessionURL(v.SessionID, "/branch"), v.CSRF, v.ID)
	}
	m.Raw("\n</header>\n")
	if v.Reasoning != "" {
		m.F(`<details class="reasoning"><summary>reasoning</summary><pre>%s</pre></details>`, plain(v.Reasoning))
	}
	m.Raw("\n")
	switch {
	case v.Role == store.RoleTool:
		m.F(`<details class="result"><summary>result <small>%s bytes</small></summary><pre>%s</pre></details>
`, num(len(v.Content)), plain(v.Content))
	case v.Content != "":
		m.F(`<div class="md">%s</div>`, renderMarkdown(v.Content))
	}
	m.Raw("\n")
	for _, c := range v.Calls {
		s.callHTML(m, c)
	}
	m.Raw("\n</article>")
}

func (s *Server) summaryHTML(m *markup.Writer, v msgView) {
	m.Raw(`<section class="compaction`)
	m.If(!v.Active, " old")
	m.F(`" id="m%s" data-nav>
<header>⟳ Compaction <small title="%s">%s · #%s`, v.ID, stamp(v.Timestamp), s.rel(v.Timestamp), v.ID)
	m.If(!v.Active, " · superseded by a later compaction")
	m.F(`</small></header>
<details><summary>Summary the model sees from here on</summary><div class="md">%s</div>
`, renderMarkdown(v.Body))
	if v.Ledger != "" {
		m.F(`<details class="ledger-in"><summary>Working set ledger</summary><div class="md">%s</div></details>`, renderMarkdown(v.Ledger))
	}
	m.Raw("</details>\n</section>")
}

// callHTML writes a tool call with its result when the result is on the page.
func (s *Server) callHTML(m *markup.Writer, c callView) {
	m.F(`<details class="call" data-nav><summary>→ <code>%s</code> <small>%s</small>`, c.Function.Name, shorten(c.Function.Arguments, 80))
	if c.Result == nil {
		m.Raw(` <small>(result not on this page)</small>`)
	}
	m.F(`</summary>
<pre class="args">%s</pre>
`, plain(prettyJSON(c.Function.Arguments)))
	if id := c.Delegated(); id != "" {
		m.F(`<p class="delegated">sub-agent session: <a href="%s">%s</a></p>`, s.sessionURL(id, ""), id)
	}
	m.Raw("\n")
	if r := c.Result; r != nil {
		m.F(`<div class="result" id="m%s"><div class="rhead">result <a class="anchor" href="#m%s">#%s</a> <small>%s bytes</small></div><pre>%s</pre></div>`,
			r.ID, r.ID, r.ID, num(len(r.Content)), plain(r.Content))
	}
	m.Raw("\n</details>")
}
