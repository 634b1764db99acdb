package web

import "github.com/spoolhq/spool/web/markup"

func (s *Server) sessionsHTML(m *markup.Writer, d sessionsData) {
	s.head(m, d.baseData)
	m.F(`
<h1>Sessions</h1>
<form class="filters" method="get" action="%s" role="search">
<input type="search" name="q" id="filter-q" value="%s" placeholder="Type to search titles and first prompts (f)" aria-label="Search titles and first prompts"
 hx-get="%s" hx-trigger="input changed delay:250ms, search" hx-target="#rows" hx-select="#rows" hx-swap="outerHTML" hx-push-url="true" hx-include="closest form">
<label>Source <input name="source" value="%s" list="dl-source" size="8"></label>
<label>Model <input name="model" value="%s" list="dl-model" size="12"></label>
<label>Cwd <input name="cwd" value="%s" list="dl-cwd" size="16"></label>
`, s.url("/"), d.Q, s.url("/"), d.Source, d.Model, d.Cwd)
	for _, dl := range []struct {
		id   string
		vals []string
	}{{"dl-source", d.Sources}, {"dl-model", d.Models}, {"dl-cwd", d.Cwds}} {
		m.F(`<datalist id="%s">`, dl.id)
		for _, v := range dl.vals {
			m.F(`<option value="%s">`, v)
		}
		m.Raw("</datalist>\n")
	}
	m.Raw(`<button type="submit">Filter</button>` + "\n")
	if d.filtered() {
		m.F(`<a href="%s">Clear</a>`, s.url("/"))
	}
	m.Raw("\n</form>\n")
	s.rowsHTML(m, d)
	foot(m)
}

func (d sessionsData) filtered() bool {
	return d.Q != "" || d.Source != "" || d.Model != "" || d.Cwd != ""
}

// rowsHTML is the list itself, the part a filter as you type replaces.
func (s *Server) rowsHTML(m *markup.Writer, d sessionsData) {
	m.Raw("\n<div id=\"rows\">\n")
	if len(d.Rows) == 0 {
		m.Raw(`<p class="empty">No sessions`)
		m.If(d.filtered(), " match these filters")
		m.Raw(".</p>")
	} else {
		m.Raw(`<table class="sessions">
<thead><tr><th>Session</th><th class="n">Msgs</th><th class="n">Tools</th><th class="n">Tokens</th><th class="n">Cost</th><th class="n">Cached</th><th>Last active</th><th>Where</th></tr></thead>
<tbody>
`)
		for _, r := range d.Rows {
			s.rowHTML(m, r)
			for _, b := range r.Branches {
				s.branchRowHTML(m, b)
			}
		}
		m.Raw("\n</tbody>\n</table>\n")
	}
	pager(m, d.Prev, d.Next, "← newer", "older →", d.Page)
	m.Raw("</div>\n")
}

const unmatchedTitle = ` title="does not match the filters: listed for a branch under it that does"`

func (s *Server) rowHTML(m *markup.Writer, r row) {
	m.Raw(`<tr class="srow`)
	m.If(r.Unmatched, " unmatched")
	m.Raw(`" data-nav`)
	m.If(r.Unmatched, unmatchedTitle)
	m.F(`>
<td class="name"><a href="%s" class="title">%s</a>`, s.sessionURL(r.ID, ""), shorten(r.Name(), 80))
	if r.Live != nil {
		m.Raw(" ")
		s.badge(m, r.Live)
	}
	m.F(`
<div class="meta"><span class="src">%s</span>`, r.Source)
	if r.Model != "" {
		m.F(` · <span class="model">%s</span>`, r.Model)
	}
	m.If(r.Ended(), " · ended")
	m.Raw("\n")
	if r.TipID != "" && r.TipID != r.ID {
		m.F(` · <a href="%s" title="compression chain: continues in %s">chain → tip</a>`, s.sessionURL(r.TipID, ""), r.TipID)
	}
	m.Raw("\n")
	if r.BranchOf != "" {
		m.F(` · branch of <a href="%s">%s</a>`, s.sessionURL(r.BranchOf, ""), shorten(r.BranchOf, 24))
	}
	m.Raw("\n")
	if len(r.Branches) > 0 {
		n := r.Descendants()
		branches := "branch"
		if n > 1 {
			branches = "branches"
		}
		m.F(` · <button type="button" class="toggle" data-group="%s" aria-expanded="true">%s %s ▾</button>`, r.ID, n, branches)
	}
	m.Raw("</div></td>\n")
	s.rowNumbers(m, r, true)
}

// rowNumbers are a row's count, usage and place cells, closing the row.
func (s *Server) rowNumbers(m *markup.Writer, r row, cwdTitle bool) {
	u := r.Usage
	m.F(`<td class="n" data-label="msgs">%s</td><td class="n" data-label="tools">%s</td>
<td class="n" data-label="tokens">%s</td><td class="n" data-label="cost">%s</td><td class="n" data-label="cached">%s</td>
<td class="when" title="%s">%s</td>
<td class="where">`, num(r.Shown.Messages), num(r.Shown.ToolCalls), num(u.InputTokens+u.OutputTokens), usd(u.CostUSD),
		pct(cachedShare(u)), stamp(r.LastActive), s.rel(r.LastActive))
	if r.GitBranch != "" {
		m.F(`<span class="branch">⎇ %s</span> `, r.GitBranch)
	}
	if cwdTitle {
		m.F(`<span class="cwd" title="%s">%s</span></td>`, r.Cwd, shorten(r.Cwd, 40))
	} else {
		m.F(`<span class="cwd">%s</span></td>`, shorten(r.Cwd, 40))
	}
	m.Raw("\n</tr>")
}

func (s *Server) branchRowHTML(m *markup.Writer, r row) {
	m.F(`<tr class="srow sub depth%s`, min(r.Depth, 3))
	m.If(r.Unmatched, " unmatched")
	m.F(`" data-nav data-in-group="%s"`, r.Group)
	m.If(r.Unmatched, unmatchedTitle)
	m.F(`>
<td class="name"><span class="edge">↳ branch</span> <a href="%s" class="title">%s</a>`, s.sessionURL(r.ID, ""), shorten(r.Name(), 70))
	if r.Live != nil {
		m.Raw(" ")
		s.badge(m, r.Live)
	}
	m.F(`
<div class="meta"><span class="src">%s</span>`, r.Source)
	if r.Model != "" {
		m.F(` · %s`, r.Model)
	}
	m.Raw("</div></td>\n")
	s.rowNumbers(m, r, false)
	for _, b := range r.Branches {
		s.branchRowHTML(m, b)
	}
}
