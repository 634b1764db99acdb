package web

import (
	"strconv"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/web/markup"
)

func (s *Server) searchHTML(m *markup.Writer, d searchData) {
	s.head(m, d.baseData)
	m.F(`
<h1>Search</h1>
<form class="filters" method="get" action="%s" role="search">
<input type="search" name="q" value="%s" placeholder="words, &quot;a phrase&quot;, prefix*" aria-label="Search text" id="search-q" autofocus>
<label>Role <select name="role"><option value="">any</option>`, s.url("/search"), d.Q)
	for _, r := range []string{"user", "assistant", "tool"} {
		m.F(`<option value="%s"`, r)
		m.If(r == d.Role, " selected")
		m.F(`>%s</option>`, r)
	}
	m.F(`</select></label>
<label>Source <input name="source" value="%s" size="8"></label>
<button type="submit">Search</button>
</form>
`, d.Source)
	if d.Searched {
		s.searchHits(m, d)
	}
	foot(m)
}

func (s *Server) searchHits(m *markup.Writer, d searchData) {
	if len(d.Hits) == 0 {
		m.Raw(`<p class="empty">No messages match.</p>`)
	} else {
		m.Raw("<ol class=\"hits\">\n")
		for _, h := range d.Hits {
			at := strconv.FormatInt(h.MessageID, 10)
			m.F(`<li data-nav><a class="hit" href="%s">
<span class="role">%s</span> <span class="src">%s</span>`, s.sessionURL(h.SessionID, "?at="+at+"#m"+at), h.Role, h.Source)
			m.If(h.Compacted && !h.Active, ` <span class="archived-tag">archived</span>`)
			m.Raw("\n")
			if t := d.Titles[h.SessionID]; t != "" {
				m.F(`<span class="stitle">%s</span> `, shorten(t, 60))
			}
			m.F(`<span class="sid">%s</span> <small title="%s">%s</small>
<span class="snip">%s</span></a></li>
`, shorten(h.SessionID, 26), stamp(h.Timestamp), s.rel(h.Timestamp), snippetHTML(h.Snippet))
		}
		m.Raw("</ol>\n")
	}
	pager(m, d.Prev, d.Next, "← previous", "next →", d.Page)
}

// pager links the previous and next pages of a list.
func pager(m *markup.Writer, prev, next, prevText, nextText string, page int) {
	m.Raw(`<nav class="pager">`)
	if prev != "" {
		m.F(`<a href="%s" rel="prev">%s</a>`, prev, prevText)
	}
	m.F(` <span>page %s</span> `, page)
	if next != "" {
		m.F(`<a href="%s" rel="next">%s</a>`, next, nextText)
	}
	m.Raw("</nav>\n")
}

func (s *Server) usageHTML(m *markup.Writer, d usageData) {
	s.head(m, d.baseData)
	m.F(`
<h1>Usage <small>%s</small></h1>
<p class="totals">%s model calls · %s prompt tokens (%s cached) · %s output · %s</p>
`, d.SinceTo, num(d.Total.APICalls), num(d.Total.InputTokens), pct(cachedShare(d.Total)), num(d.Total.OutputTokens), usd(d.Total.CostUSD))
	chartHTML(m, d.Chart)
	m.Raw(`<div class="two">
<section><h2>Per model</h2>
<table class="usage"><thead><tr><th>model</th><th class="n">calls</th><th class="n">prompt</th><th class="n">cached</th><th class="n">output</th><th class="n">cost</th></tr></thead><tbody>
`)
	for _, r := range d.Models {
		name := r.Model
		if name == "" {
			name = "(unknown)"
		}
		usageRow(m, name, r.Usage)
	}
	if len(d.Models) == 0 {
		m.Raw(`<tr><td colspan="6" class="empty">No model calls.</td></tr>`)
	}
	m.Raw(`</tbody></table></section>
<section><h2>Per day</h2>
<table class="usage"><thead><tr><th>day</th><th class="n">calls</th><th class="n">prompt</th><th class="n">cached</th><th class="n">output</th><th class="n">cost</th></tr></thead><tbody>
`)
	for _, r := range d.Days {
		if r.Usage.APICalls != 0 {
			usageRow(m, r.Day.Format("2006-01-02"), r.Usage)
		}
	}
	m.Raw("</tbody></table></section>\n</div>\n")
	foot(m)
}

func usageRow(m *markup.Writer, name string, u store.Usage) {
	m.F(`<tr><td>%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td></tr>
`, name, num(u.APICalls), num(u.InputTokens), pct(cachedShare(u)), num(u.OutputTokens), usd(u.CostUSD))
}

func chartHTML(m *markup.Writer, c chart) {
	m.F(`<figure class="chart">
<svg viewBox="0 0 %s %s" role="img" aria-label="Prompt tokens per day, cached part in the lower bar" class="bars">
<line x1="0" y1="%s" x2="%s" y2="%s" class="axis"/>
`, c.Width, c.Height, c.Height-24, c.Width, c.Height-24)
	for _, b := range c.Bars {
		m.F(`<g><title>%s</title>
<rect x="%s" y="%s" width="%s" height="%s" class="cached"/>
<rect x="%s" y="%s" width="%s" height="%s" class="uncached"/>
<rect x="%s" y="%s" width="%s" height="%s" class="output"/>
`, b.Title, b.X, b.CachedY, b.W, b.CachedH, b.X, b.UncachedY, b.W, b.UncH, b.X, b.OutputY, b.W, b.OutputH)
		if b.ShowLabel {
			m.F(`<text x="%s" y="%s" text-anchor="middle" class="lbl">%s</text>`, b.LabelX, b.LabelY, b.Label)
		}
		m.Raw("</g>\n")
	}
	m.F(`<text x="4" y="12" class="lbl">max %s`, c.MaxLabel)
	m.If(c.Empty, " (no calls in this period)")
	m.Raw(`</text>
</svg>
<figcaption><span class="key cached"></span> cached prompt tokens <span class="key uncached"></span> uncached prompt tokens <span class="key output"></span> output tokens</figcaption>
</figure>
`)
}
