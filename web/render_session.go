package web

import (
	"strings"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/web/markup"
)

func (s *Server) sessionHTML(m *markup.Writer, d sessionData) {
	s.head(m, d.baseData)
	s.sessionHeader(m, d)
	m.Raw(`
<div class="layout">
<section class="transcript" aria-label="Transcript">
<nav class="pager">`)
	for _, l := range []struct{ href, attrs, text string }{
		{d.First, "", "⇤ first"}, {d.Older, ` rel="prev"`, "← older"}, {d.Newer, ` rel="next"`, "newer →"}, {d.Last, "", "last ⇥"},
	} {
		if l.href != "" {
			m.F(`<a href="%s"%s>%s</a>`, l.href, markup.HTML(l.attrs), l.text)
		}
		m.Raw(" ")
	}
	m.Raw("</nav>\n<div id=\"messages\"")
	if d.Newer == "" {
		m.F(` data-live="%s"`, s.sessionURL(d.Session.ID, "/events?from="+itoa(d.FirstID)+"&after="+itoa(d.LastID)))
	}
	m.Raw(">\n")
	if len(d.Items) == 0 {
		m.Raw(`<p class="empty">No messages yet.</p>`)
	}
	s.itemsHTML(m, d.Items)
	m.Raw("\n</div>\n<nav class=\"pager\">")
	if d.Older != "" {
		m.F(`<a href="%s">← older</a>`, d.Older)
	}
	m.Raw(" ")
	if d.Newer != "" {
		m.F(`<a href="%s" id="newer">newer →</a>`, d.Newer)
	}
	m.Raw("</nav>\n</section>\n")
	s.sessionSide(m, d)
	m.Raw("</div>\n")
	foot(m)
}

func (s *Server) sessionHeader(m *markup.Writer, d sessionData) {
	x := d.Session
	m.Raw("\n<header class=\"shead\">\n<h1 id=\"title\">")
	if x.Title != "" {
		m.Text(x.Title)
	} else {
		m.F(`<span class="untitled">%s</span>`, x.ID)
	}
	m.Raw("</h1>\n<span id=\"live-badge\">")
	if d.Live != nil {
		s.badge(m, d.Live)
	}
	m.F(`</span>
<dl class="facts">
<div><dt>id</dt><dd><code>%s</code></dd></div>
<div><dt>source</dt><dd>%s</dd></div>
`, x.ID, x.Source)
	if x.Model != "" {
		m.F("<div><dt>model</dt><dd>%s</dd></div>\n", x.Model)
	}
	m.F("<div><dt>started</dt><dd title=\"%s\">%s</dd></div>\n", stamp(x.StartedAt), s.rel(x.StartedAt))
	if x.Ended() {
		m.F("<div><dt>ended</dt><dd>%s (%s)</dd></div>\n", s.rel(x.EndedAt), x.EndReason)
	}
	m.F(`<div><dt>messages</dt><dd>%s, %s tool calls`, num(x.Shown.Messages), num(x.Shown.ToolCalls))
	if x.Shown.Messages != x.MessageCount {
		m.F(` (%s in the model's view since compaction)`, num(x.MessageCount))
	}
	u := x.Usage
	m.F(`</dd></div>
<div><dt>tokens</dt><dd>%s in (%s cached) / %s out · %s calls · %s</dd></div>
`, num(u.InputTokens), pct(cachedShare(u)), num(u.OutputTokens), num(u.APICalls), usd(u.CostUSD))
	if x.Cwd != "" {
		m.F("<div><dt>cwd</dt><dd><code>%s</code></dd></div>\n", x.Cwd)
	}
	if x.GitBranch != "" {
		m.F("<div><dt>git</dt><dd>⎇ %s</dd></div>\n", x.GitBranch)
	}
	if x.SystemPromptHash != "" {
		m.F(`<div><dt>system prompt</dt><dd><a href="%s" id="prompt-link"><code>%s</code></a> (frozen, by hash)</dd></div>
`, s.sessionURL(x.ID, "/prompt"), shorten(x.SystemPromptHash, 13))
	}
	m.Raw("</dl>\n")
	s.sessionActions(m, x, d.CSRF)
	m.Raw("</header>\n")
}

func (s *Server) sessionActions(m *markup.Writer, x store.Session, csrf string) {
	m.F("<details class=\"actions\" id=\"actions\">\n<summary>Actions</summary>\n<form method=\"post\" action=\"%s\" class=\"inline\" id=\"rename-form\">\n",
		s.sessionURL(x.ID, "/rename"))
	csrfField(m, csrf)
	m.F(`
<label>Title <input name="title" value="%s" id="rename-title" maxlength="200"></label> <button type="submit">Rename</button>
</form>
<form method="post" action="%s" class="inline" id="export-form">
`, x.Title, s.sessionURL(x.ID, "/export"))
	csrfField(m, csrf)
	m.F(`
<label><input type="checkbox" name="tree" value="1"> whole tree (branches, continuations)</label> <button type="submit" id="export-btn">Export JSONL</button>
</form>
<form method="post" action="%s" class="inline">
`, s.sessionURL(x.ID, "/branch"))
	csrfField(m, csrf)
	m.F(`
<label>Branch title <input name="title" placeholder="(optional)"></label> <button type="submit">Branch from the latest message</button>
</form>
<a class="danger" href="%s">Delete…</a>
</details>
`, s.sessionURL(x.ID, "/delete"))
}

func (s *Server) sessionSide(m *markup.Writer, d sessionData) {
	m.Raw("\n<aside class=\"side\">\n<section class=\"tree\" aria-label=\"Lineage\">\n<h2>Lineage</h2>\n<ul class=\"lineage\">")
	s.nodeHTML(m, d.Tree)
	m.Raw("</ul>\n")
	if len(d.Chain) > 0 {
		m.Raw(`<p class="chain">Compression chain: `)
		for i, c := range d.Chain {
			m.If(i > 0, " → ")
			m.F(`<a href="%s">%s</a>`, s.sessionURL(c.ID, ""), shorten(c.ID, 22))
		}
		m.Raw("</p>")
	}
	m.Raw("\n</section>\n")
	if d.Ledger != "" {
		m.F(`<section class="ledger" aria-label="Working set">
<h2>Working set <small>(latest summary)</small></h2>
<div class="md">%s</div>
</section>
`, renderMarkdown(strings.TrimSpace(strings.TrimPrefix(d.Ledger, ledgerHeading))))
	}
	s.callsHTML(m, d)
	m.Raw("</aside>\n")
}

func (s *Server) nodeHTML(m *markup.Writer, n *node) {
	if n == nil {
		return
	}
	rel := string(n.Session.Relation)
	if rel == "" {
		rel = "root"
	}
	m.Raw(`<li class="`)
	m.If(n.Current, "current")
	m.F(`"><span class="rel rel-%s">%s</span>
`, rel, rel)
	name := shorten(cmpOr(n.Session.Title, n.Session.ID), 40)
	if n.Current {
		m.F(`<strong>%s</strong>`, name)
	} else {
		m.F(`<a href="%s">%s</a>`, s.sessionURL(n.Session.ID, ""), name)
	}
	m.F("\n<small>%s msgs</small>\n", num(n.Session.Shown.Messages))
	if len(n.Children) > 0 {
		m.Raw("<ul>")
		for _, c := range n.Children {
			s.nodeHTML(m, c)
		}
		m.Raw("</ul>")
	}
	m.Raw("</li>")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s *Server) callsHTML(m *markup.Writer, d sessionData) {
	m.F(`<section class="calls" aria-label="Model calls">
<h2>Model calls <small>(%s`, len(d.Requests))
	if d.Breaks > 0 {
		m.F(`, %s cache break%s`, d.Breaks, plural(d.Breaks))
	}
	m.Raw(")</small></h2>\n")
	if len(d.Requests) == 0 {
		m.Raw(`<p class="empty">No model calls recorded.</p>`)
	} else {
		m.Raw("<ol class=\"reqs\">\n")
		for _, rq := range d.Requests {
			s.requestHTML(m, rq)
		}
		m.Raw("</ol>\n")
	}
	m.Raw("\n</section>\n")
}

func (s *Server) requestHTML(m *markup.Writer, rq store.RequestRecord) {
	u := rq.Usage
	m.Raw("<li")
	m.If(rq.Break != nil, ` class="broke"`)
	m.F(`><details class="req">
<summary><span class="head"><span class="when" title="%s">%s</span> <span class="task">%s</span>`, stamp(rq.At), s.rel(rq.At), rq.Task)
	if rq.Model != "" {
		m.F(` <small>%s</small>`, rq.Model)
	}
	m.F(`</span>
<span class="nums"><span>%s in</span> <span>%s cached</span> <span>%s out</span> <span>%s</span> <span class="lat">%s</span></span>
`, num(u.InputTokens), num(u.CacheReadTokens), num(u.OutputTokens), usd(u.CostUSD), latency(rq.Latency))
	if rq.Break != nil {
		m.F(`<span class="breakwhy">⚠ cache break: %s</span>`, explainBreak(rq.Break))
	}
	m.F(`</summary>
<dl class="reqd">
<dt>at</dt><dd>%s</dd>
<dt>task</dt><dd>%s</dd>
`, stamp(rq.At), rq.Task)
	if rq.Model != "" {
		m.F(`<dt>model</dt><dd>%s`, rq.Model)
		if rq.Fallback != "" {
			m.F(` (fallback %s)`, rq.Fallback)
		}
		m.Raw("</dd>\n")
	}
	m.F(`<dt>input</dt><dd>%s tokens</dd>
<dt>cached</dt><dd>%s read, %s written</dd>
<dt>output</dt><dd>%s tokens`, num(u.InputTokens), num(u.CacheReadTokens), num(u.CacheWriteTokens), num(u.OutputTokens))
	if u.ReasoningTokens != 0 {
		m.F(` (%s reasoning)`, num(u.ReasoningTokens))
	}
	m.F(`</dd>
<dt>cost</dt><dd>%s</dd>
<dt>latency</dt><dd>%s</dd>
`, usd(u.CostUSD), latency(rq.Latency))
	if b := rq.Break; b != nil {
		m.F(`<dt>cache break</dt><dd>layer %s`, b.Layer)
		if b.Index != 0 {
			m.F(` #%s`, b.Index)
		}
		m.F(`, reason %s, %s cached tokens lost`, b.Reason, num(b.LostTokens))
		if b.Detail != "" {
			m.F(`: %s`, b.Detail)
		}
		m.Raw("</dd>")
	}
	m.Raw("\n</dl>\n</details></li>\n")
}
