package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/web/markup"
)

// The pages are Go code writing through one escaping writer (package web/markup): the markup
// is this package's own constant text, every value in it is escaped by the writer.

// render writes a whole page; a buffered page keeps a failed handler from sending half of one.
func (s *Server) render(w http.ResponseWriter, page func(*markup.Writer)) error {
	var m markup.Writer
	page(&m)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if _, err := w.Write([]byte(m.String())); err != nil {
		return fmt.Errorf("write page: %w", err)
	}
	return nil
}

// rel is relTime against the server's clock.
func (s *Server) rel(t time.Time) string { return relTime(s.opts.Now(), t) }

// url is the browser's prefix followed by path, for an href or action (path segments that
// hold values are markup.Seg'd by the caller).
func (s *Server) url(path string) string { return s.opts.Prefix + path }

// sessionURL is a session's page, followed by suffix (a sub-page such as "/prompt").
func (s *Server) sessionURL(id, suffix string) string {
	return s.opts.Prefix + "/sessions/" + markup.Seg(id) + suffix
}

// head opens a page: the document head, the top bar and the keyboard help.
func (s *Server) head(m *markup.Writer, d baseData) {
	m.F(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="htmx-config" content='{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"historyCacheSize":0}'>
<title>%s · spool</title>
<link rel="stylesheet" href="%s">
<script src="%s" defer></script>
<script src="%s" defer></script>
</head>
<body data-csrf="%s">
<header class="top">
<a class="brand" href="%s">spool</a>
<nav>
`, d.Title, s.url("/assets/style.css"), s.url("/assets/htmx.min.js"), s.url("/assets/app.js"), d.CSRF, s.url("/"))
	current := func(nav string) markup.HTML {
		if d.Nav == nav {
			return ` aria-current="page"`
		}
		return ""
	}
	m.F(`<a href="%s"%s accesskey="l">Sessions</a>
<a href="%s"%s>Search</a>
<a href="%s"%s>Usage</a>
`, s.url("/"), current("sessions"), s.url("/search"), current("search"), s.url("/usage"), current("usage"))
	if d.SignOut != "" {
		m.F(`<a href="%s" class="signout">Sign out</a>`, d.SignOut)
	}
	m.F(`
</nav>
<form class="globalsearch" action="%s" method="get" role="search">
<input type="search" name="q" value="%s" placeholder="Search messages (/)" aria-label="Search messages" id="global-q">
</form>
<button type="button" class="help" id="help-btn" aria-label="Keyboard shortcuts">?</button>
</header>
`, s.url("/search"), d.Query)
	m.Raw(keyboardHelp)
	m.Raw("<main>\n")
}

const keyboardHelp = `<dialog id="help">
<h2>Keyboard</h2>
<table class="keys">
<tr><td><kbd>j</kbd> / <kbd>k</kbd></td><td>next / previous row or message</td></tr>
<tr><td><kbd>Enter</kbd></td><td>open the selected row</td></tr>
<tr><td><kbd>o</kbd></td><td>expand or collapse (tool call, archived span, reasoning)</td></tr>
<tr><td><kbd>/</kbd></td><td>search messages</td></tr>
<tr><td><kbd>f</kbd></td><td>filter sessions (type to search titles)</td></tr>
<tr><td><kbd>g</kbd> <kbd>s</kbd> / <kbd>g</kbd> <kbd>u</kbd></td><td>sessions / usage</td></tr>
<tr><td><kbd>Esc</kbd></td><td>leave a field, close this</td></tr>
</table>
<form method="dialog"><button>Close</button></form>
</dialog>
`

// foot closes a page head opened.
func foot(m *markup.Writer) { m.Raw("\n</main>\n</body>\n</html>\n") }

// badge shows a held turn lease.
func (s *Server) badge(m *markup.Writer, l *store.HeldLease) {
	m.F(`<span class="live" title="turn lease held by %s since %s, until %s">● live <span class="holder">%s</span> since %s</span>`,
		l.Holder, stamp(l.AcquiredAt), stamp(l.ExpiresAt), shorten(l.Holder, 40), s.rel(l.AcquiredAt))
}

// csrfField is a form's hidden CSRF token.
func csrfField(m *markup.Writer, token string) {
	m.F(`<input type="hidden" name="csrf" value="%s">`, token)
}

// plural is "s" when n is not one.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (s *Server) errorPage(m *markup.Writer, d errorData) {
	s.head(m, d.baseData)
	m.F(`
<section class="error">
<h1>%s · %s</h1>
<p>%s</p>
<p><a href="%s">Back to the sessions</a></p>
</section>
`, d.Status, d.Title, d.Message, s.url("/"))
	foot(m)
}

func (s *Server) promptHTML(m *markup.Writer, d promptData) {
	s.head(m, d.baseData)
	m.F(`
<h1>System prompt of <a href="%s">%s</a></h1>
<p>sha256 <code>%s</code>: frozen when the session started; every request sends these bytes unchanged until a compaction.</p>
`, s.sessionURL(d.Session.ID, ""), titleOf(d.Session), d.Session.SystemPromptHash)
	if d.Prompt != "" {
		m.F(`<pre class="prompt">%s</pre>`, plain(d.Prompt))
	} else {
		m.Raw(`<p class="empty">No system prompt stored.</p>`)
	}
	foot(m)
}

func (s *Server) deleteHTML(m *markup.Writer, d deleteData) {
	s.head(m, d.baseData)
	title := markup.HTML(markup.Escape(d.Session.ID))
	if d.Session.Title != "" {
		title = markup.HTML("“" + markup.Escape(d.Session.Title) + "”")
	}
	m.F(`
<section class="confirm">
<h1>Delete %s?</h1>
<p>This removes session <code>%s</code> and its %s active messages (and the archived ones) for good.
`, title, d.Session.ID, num(d.Session.MessageCount))
	if n := len(d.Children); n > 0 {
		m.F(`Its %s child session%s lose their parent link; delegate runs are deleted with it.`, n, plural(n))
	}
	m.Raw("</p>\n")
	if d.Live != nil {
		m.Raw(`<p class="warn">A turn is running right now (`)
		s.badge(m, d.Live)
		m.Raw("): deleting is refused until it ends.</p>")
	}
	m.F("\n<form method=\"post\" action=\"%s\">\n", s.sessionURL(d.Session.ID, "/delete"))
	csrfField(m, d.CSRF)
	m.F(`
<input type="hidden" name="confirm" value="%s">
<button type="submit" class="danger" id="confirm-delete">Delete for good</button>
<a href="%s">Cancel</a>
</form>
</section>
`, d.Session.ID, s.sessionURL(d.Session.ID, ""))
	foot(m)
}
