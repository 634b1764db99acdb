package web

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/spoolhq/spool/internal/browsertest"
	"github.com/spoolhq/spool/store"
)

func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// downloads lets the browser download into a fresh directory (allow, an action) and returns
// download, which waits for the next download to finish and returns its bytes.
func downloads(t *testing.T, ctx context.Context) (allow chromedp.Action, download func() []byte) {
	dl := t.TempDir()
	done := make(chan string, 1)
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*browser.EventDownloadProgress); ok && e.State == browser.DownloadProgressStateCompleted {
			select {
			case done <- e.GUID:
			default:
			}
		}
	})
	allow = browser.SetDownloadBehavior(browser.SetDownloadBehaviorBehaviorAllowAndName).WithDownloadPath(dl).WithEventsEnabled(true)
	return allow, func() []byte {
		t.Helper()
		var guid string
		select {
		case guid = <-done:
		case <-ctx.Done():
			t.Fatal("the export never finished downloading")
		}
		b, err := os.ReadFile(filepath.Join(dl, guid))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func TestBrowser(t *testing.T) {
	ctx := browsertest.New(t)
	f := newFixture(t)
	_, base := newServer(t, f.st, Options{PollInterval: 50 * time.Millisecond})
	var text string
	var ok bool

	if dir := os.Getenv("SPOOL_SCREENSHOTS"); dir != "" {
		// First, so the pages show the fixture as seeded.
		t.Run("screenshots", func(t *testing.T) { screenshots(t, ctx, base, f, dir) })
	}

	t.Run("list", func(t *testing.T) {
		run(t, ctx, "open the list", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible("table.sessions"),
			chromedp.Text("table.sessions", &text))
		for _, want := range []string{"Refactor the parser", "↳ branch", "Try the other fix", "⎇ main", "71%"} {
			if !strings.Contains(text, want) {
				t.Errorf("list lacks %q", want)
			}
		}
		// Branches fold under their root and unfold again.
		sel := fmt.Sprintf(`tr[data-in-group="%s"]`, f.demo)
		run(t, ctx, "fold the branches", chromedp.Click(fmt.Sprintf(`button.toggle[data-group="%s"]`, f.demo)),
			browsertest.WaitJS(`document.querySelector('`+sel+`').hidden === true`),
			chromedp.Click(fmt.Sprintf(`button.toggle[data-group="%s"]`, f.demo)),
			browsertest.WaitJS(`document.querySelector('`+sel+`').hidden === false`))
		// Type to search: htmx swaps the rows in place.
		run(t, ctx, "type to search", chromedp.SendKeys("#filter-q", "bold"),
			browsertest.WaitJS(`!document.querySelector("#rows").textContent.includes("Refactor the parser")`),
			chromedp.Text("#rows", &text))
		if !strings.Contains(text, "<b>bold title</b>") {
			t.Errorf("filtered rows = %q", shorten(text, 300))
		}
		// A query only the branch matches: the branch is shown under its root, whose row is
		// marked as listed for it (muted) rather than as a match.
		run(t, ctx, "a query only a branch matches", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible("#filter-q"),
			chromedp.SendKeys("#filter-q", "other fix"),
			browsertest.WaitJS(`document.querySelector("#rows tr.srow.unmatched") !== null`),
			chromedp.Evaluate(fmt.Sprintf(`(function(){
				var root=document.querySelector("#rows tr.srow.unmatched"), kids=document.querySelectorAll('#rows tr[data-in-group="%s"]');
				return root.querySelector('a.title').getAttribute('href').endsWith("/%s") && kids.length===1 &&
					kids[0].textContent.includes("Try the other fix") && root.nextElementSibling===kids[0] &&
					getComputedStyle(root.querySelector('a.title')).fontWeight==="400" &&
					document.querySelectorAll("#rows tr.srow").length===2})()`, f.demo, f.demo), &ok))
		if !ok {
			t.Error("a query matching only the branch does not show it nested under its root, the root muted")
		}
		// Keyboard: j selects the first row, Enter opens it.
		run(t, ctx, "keyboard", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible("table.sessions"),
			chromedp.KeyEvent("j"), browsertest.WaitJS(`document.querySelector("tr.sel") !== null`),
			chromedp.KeyEvent("\r"), browsertest.WaitJS(`location.pathname.startsWith("/ui/sessions/")`))
	})

	t.Run("search and jump to a hit", func(t *testing.T) {
		run(t, ctx, "search", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible("#global-q"),
			chromedp.SendKeys("#global-q", "zebra\r"), chromedp.WaitVisible("ol.hits"))
		// An archived hit: the page opens its collapsed span and scrolls it into view.
		run(t, ctx, "jump to an archived hit",
			chromedp.Click(`//li[.//span[contains(@class,"archived-tag")]]/a`, chromedp.BySearch),
			browsertest.WaitJS(`location.hash.startsWith("#m") && document.getElementById(location.hash.slice(1)) !== null`),
			chromedp.Evaluate(`(function(){var el=document.getElementById(location.hash.slice(1));
				var d=el.closest("details.archived"); var r=el.getBoundingClientRect();
				return d!==null && d.open && r.height>0 && r.top>=0 && r.top<innerHeight})()`, &ok))
		if !ok {
			t.Error("the archived hit is not shown: its span stayed closed or it is off screen")
		}
	})

	t.Run("session with compactions and branches", func(t *testing.T) {
		run(t, ctx, "open", chromedp.Navigate(base+"/ui/sessions/"+f.demo), chromedp.WaitVisible(".compaction"),
			chromedp.Text(".side .tree", &text))
		if !strings.Contains(text, "Try the other fix") || !strings.Contains(text, "branch") {
			t.Errorf("lineage = %q", text)
		}
		// The archived span is closed until asked for.
		run(t, ctx, "expand the archived span",
			chromedp.Evaluate(`document.querySelector("details.archived").open`, &ok))
		if ok {
			t.Error("archived span open before it was asked for")
		}
		run(t, ctx, "expand the archived span", chromedp.Click("details.archived > summary"),
			chromedp.WaitVisible("details.archived article.msg"),
			chromedp.Text("details.archived", &text))
		if !strings.Contains(text, "file B") {
			t.Errorf("archived span = %q", shorten(text, 200))
		}
		sel := fmt.Sprintf("#m%d details.call", f.toolCall)
		run(t, ctx, "expand a tool call", chromedp.Click(sel+" > summary"), chromedp.WaitVisible(sel+" pre.args"),
			chromedp.Text(sel, &text))
		if !strings.Contains(text, "src/file_d.go") || !strings.Contains(text, "func zebra()") {
			t.Errorf("tool call = %q", text)
		}
		run(t, ctx, "cache break", chromedp.Text(".breakwhy", &text))
		if !strings.Contains(text, "a compaction rewrote the history") || !strings.Contains(text, "10,000 cached tokens lost") {
			t.Errorf("cache break = %q", text)
		}
		run(t, ctx, "follow the tree to the branch",
			chromedp.Click(`//section[contains(@class,"tree")]//a[contains(., "Try the other fix")]`, chromedp.BySearch),
			browsertest.WaitJS(`location.pathname.endsWith("/`+f.branch+`")`), chromedp.Text("h1#title", &text))
		if text != "Try the other fix" {
			t.Errorf("branch title = %q", text)
		}
	})

	t.Run("hostile content does not execute", func(t *testing.T) {
		run(t, ctx, "open", chromedp.Navigate(base+"/ui/sessions/"+f.evil), chromedp.WaitVisible(".side"),
			chromedp.Evaluate(`document.querySelectorAll("script").length === 2 &&
				document.querySelector("img, svg, [onerror], [onload], a[href^='javascript']") === null &&
				document.querySelector("main").textContent.includes("<script>alert('pwned')</script>")`, &ok))
		if !ok {
			t.Error("hostile content became markup")
		}
	})

	t.Run("rename and export", func(t *testing.T) {
		allow, download := downloads(t, ctx)
		run(t, ctx, "rename", chromedp.Navigate(base+"/ui/sessions/"+f.demo), chromedp.WaitVisible("#actions"),
			chromedp.Click("#actions > summary"), chromedp.WaitVisible("#rename-title"),
			chromedp.SetValue("#rename-title", "Renamed in the browser"), chromedp.Submit("#rename-title"),
			browsertest.WaitJS(`document.querySelector("h1#title").textContent === "Renamed in the browser"`))
		if s, _ := f.st.GetSession(bg, f.demo); s.Title != "Renamed in the browser" {
			t.Errorf("stored title = %q", s.Title)
		}
		run(t, ctx, "export",
			allow,
			chromedp.Click("#actions > summary"), chromedp.WaitVisible("#export-btn"), chromedp.Click("#export-btn"))
		b := download()
		first, _, _ := strings.Cut(string(b), "\n")
		if !strings.HasPrefix(first, `{"spool_export":1`) || !strings.Contains(string(b), "Renamed in the browser") {
			t.Errorf("downloaded bundle starts %q", shorten(string(b), 120))
		}
	})

	t.Run("live turn streams in", func(t *testing.T) {
		run(t, ctx, "open", chromedp.Navigate(base+"/ui/sessions/"+f.branch), chromedp.WaitVisible("#messages[data-live]"),
			// Wait for the event stream to be open (app.js marks it).
			browsertest.WaitJS(`document.querySelector("#messages").getAttribute("data-stream") === "open"`))
		l, err := f.st.AcquireLease(bg, f.branch, "pid=99:host=turn-runner:start=1:nonce=z", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, f.st, f.branch, store.Message{Role: store.RoleUser, Content: "streamed **question**"},
			store.Message{Role: store.RoleAssistant, Content: "running it", ToolCalls: []store.ToolCall{{ID: "lv", Type: "function",
				Function: store.ToolFunction{Name: "terminal", Arguments: `{"cmd":"go test ./..."}`}}}})
		run(t, ctx, "see it", browsertest.WaitJS(`document.querySelector("#messages").textContent.includes("streamed question") &&
			document.querySelector("#messages").textContent.includes("terminal") &&
			document.querySelector("#live-badge").textContent.includes("live")`))
		all, _ := f.st.Conversation(bg, f.branch, store.ViewActive)
		if _, err := f.st.ArchiveAndCompact(bg, store.CompactRequest{SessionID: f.branch, Watermark: all[len(all)-1].ID,
			Messages: []store.Message{{Role: store.RoleUser, Content: "## Goal\nstreamed compaction", Summary: true}}}, l.Fence()); err != nil {
			t.Fatal(err)
		}
		run(t, ctx, "see the compaction", browsertest.WaitJS(`document.querySelector("#messages .compaction:last-of-type") !== null &&
			document.querySelector("#messages").textContent.includes("Compaction")`))
		// The rows it archived, already on the page, are restyled in place: folded into an
		// archived span, without their branch buttons, as a reload would render them.
		run(t, ctx, "archived rows restyled", browsertest.WaitJS(`(function () {
			var q = document.querySelector("#messages > details.archived:last-of-type article#m`+fmt.Sprint(all[len(all)-1].ID)+`.arch");
			return q !== null && q.querySelector("form.branchat") === null;
		})()`))
		if err := f.st.ReleaseLease(bg, l); err != nil {
			t.Fatal(err)
		}
		run(t, ctx, "badge goes", browsertest.WaitJS(`!document.querySelector("#live-badge").textContent.includes("live")`))
	})

	// The rest of the browser's behaviour, each seen in the browser.
	// step is run with a shorter hang guard: a selector that never appears fails this step
	// instead of the whole browser's time.
	step := func(t *testing.T, what string, actions ...chromedp.Action) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	check := func(t *testing.T, what, js string) {
		t.Helper()
		var ok bool
		step(t, what, chromedp.Evaluate(js, &ok))
		if !ok {
			t.Errorf("%s: %s is false", what, shorten(js, 200))
		}
	}

	t.Run("list filters, live badge, compression chain", func(t *testing.T) {
		now := time.Now()
		for _, ns := range []store.NewSession{
			{ID: "chain-0", Title: "Chained work", Source: "slack", StartedAt: now.Add(-3 * time.Hour)},
			{ID: "chain-1", ParentID: "chain-0", Relation: store.RelationCompression, StartedAt: now.Add(-2 * time.Hour)},
		} {
			if _, err := f.st.CreateSession(bg, ns); err != nil {
				t.Fatal(err)
			}
		}
		mustAppend(t, f.st, "chain-1", store.Message{Role: store.RoleUser, Content: "carry on after the rotation", Timestamp: now.Add(-time.Hour)})
		l, err := f.st.AcquireLease(bg, "chain-1", "pid=7:host=list-runner:start=1:nonce=q", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		defer f.st.ReleaseLease(bg, l)
		step(t, "open the list", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible("table.sessions"))
		// The chain is one row, at its root, live (the lease is the chain's), linking to its tip.
		check(t, "chain row", `(function(){
			var rows = Array.prototype.filter.call(document.querySelectorAll("tr.srow"), function(r){ return r.textContent.includes("Chained work") });
			return rows.length === 1 && rows[0].querySelector('a[href$="/sessions/chain-1"]') !== null &&
				rows[0].querySelector(".live .holder").textContent.includes("list-runner") &&
				document.querySelector('a.title[href$="/sessions/chain-1"]') === null})()`)
		step(t, "filter by source", chromedp.SetValue(`input[name="source"]`, "slack"), chromedp.Submit(`input[name="source"]`),
			browsertest.WaitJS(`location.search.includes("source=slack")`), chromedp.WaitVisible("table.sessions"))
		check(t, "only slack rows", `(function(){ var r = document.querySelectorAll("tr.srow");
			return r.length === 1 && r[0].textContent.includes("Chained work") })()`)
		step(t, "filter by model", chromedp.Navigate(base+"/ui/?model=gpt-4o"), chromedp.WaitVisible("table.sessions"))
		check(t, "only gpt-4o rows", `Array.prototype.every.call(document.querySelectorAll("tr.srow .model"), function(m){ return m.textContent === "gpt-4o" }) &&
			document.querySelector('a.title[href$="/sessions/`+f.demo+`"]') !== null && !document.querySelector("table.sessions").textContent.includes("Chained work")`)
		step(t, "filter by cwd", chromedp.Navigate(base+"/ui/?cwd=/home/dev/parser"), chromedp.WaitVisible("table.sessions"))
		check(t, "only that cwd", `Array.prototype.every.call(document.querySelectorAll("tr.srow .cwd"), function(c){ return c.textContent === "/home/dev/parser" })`)
		step(t, "follow the chain to its tip", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible("table.sessions"),
			chromedp.Click(`a[href$="/sessions/chain-1"]`), browsertest.WaitJS(`location.pathname.endsWith("/sessions/chain-1")`),
			chromedp.WaitVisible("#messages"))
		check(t, "the tip shows its chain", `document.querySelector(".chain").textContent.includes("chain-0") && document.querySelector("#live-badge").textContent.includes("list-runner")`)
	})

	t.Run("search filters, highlighted hit, keyboard", func(t *testing.T) {
		step(t, "search tool results", chromedp.Navigate(base+"/ui/search"), chromedp.WaitVisible("#search-q"),
			chromedp.SendKeys("#search-q", "zebra"), chromedp.SetValue(`select[name="role"]`, "tool"), chromedp.Submit("#search-q"),
			chromedp.WaitVisible("ol.hits"))
		check(t, "only tool hits, highlighted", `(function(){ var h = document.querySelectorAll("ol.hits li");
			return h.length > 0 && Array.prototype.every.call(h, function(li){ return li.querySelector(".role").textContent === "tool" }) &&
				document.querySelector("ol.hits mark") !== null && document.querySelector("ol.hits mark").textContent.toLowerCase() === "zebra" })()`)
		step(t, "search by source", chromedp.Navigate(base+"/ui/search?q=zebra&source=cli"), chromedp.WaitVisible("ol.hits"))
		check(t, "only cli hits", `Array.prototype.every.call(document.querySelectorAll("ol.hits li .src"), function(s){ return s.textContent === "cli" })`)
		// Keyboard: leave the search field, j selects the first hit, Enter opens it at the
		// message, which is highlighted.
		step(t, "keyboard to a hit", chromedp.Navigate(base+"/ui/search?q=zebra&role=user"), chromedp.WaitVisible("ol.hits"),
			chromedp.Focus("#search-q"), chromedp.KeyEvent("\x1b"), chromedp.KeyEvent("j"), browsertest.WaitJS(`document.querySelector("ol.hits li.sel") !== null`),
			chromedp.KeyEvent("\r"), browsertest.WaitJS(`location.pathname.includes("/sessions/") && location.hash.startsWith("#m") && document.getElementById(location.hash.slice(1)) !== null`))
		check(t, "the hit is highlighted", `(function(){ var el = document.getElementById(location.hash.slice(1));
			return el.matches(":target") && getComputedStyle(el).outlineStyle === "solid" })()`)
	})

	t.Run("transcript keyboard, system prompt, ledger, model calls", func(t *testing.T) {
		step(t, "open", chromedp.Navigate(base+"/ui/sessions/"+f.demo), chromedp.WaitVisible("#messages"))
		check(t, "ledger and calls", `document.querySelector(".ledger").textContent.includes("src/file_a.go") &&
			document.querySelectorAll("ol.reqs > li").length === 4 &&
			document.querySelector("ol.reqs").textContent.includes("11,000") && document.querySelector("ol.reqs").textContent.includes("800 ms")`)
		check(t, "the model calls fit the sidebar", callsFit)
		// A model-call row opens the call's whole record.
		step(t, "open a call", chromedp.Click("ol.reqs > li.broke > details > summary"), chromedp.WaitVisible("ol.reqs > li.broke .reqd"),
			chromedp.Text("ol.reqs > li.broke .reqd", &text))
		for _, want := range []string{"cached", "written", "latency", "reason compaction", "10,000 cached tokens lost"} {
			if !strings.Contains(text, want) {
				t.Errorf("the opened call does not say %q: %q", want, text)
			}
		}
		check(t, "the opened call fits the sidebar", callsFit)
		// j walks the transcript; o on a tool call opens it.
		sel := fmt.Sprintf("#m%d details.call", f.toolCall)
		step(t, "keyboard", chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), browsertest.WaitJS(`document.querySelector("#messages .sel") !== null`))
		var steps int
		step(t, "distance to the call", chromedp.Evaluate(`(function(){ var list = Array.prototype.filter.call(document.querySelectorAll("[data-nav]"), function(el){ return el.offsetParent !== null });
			return list.indexOf(document.querySelector("`+sel+`")) - list.indexOf(document.querySelector(".sel")) })()`, &steps))
		if steps <= 0 {
			t.Fatalf("the tool call is %d rows from the selection, want it below", steps)
		}
		for i := 0; i < steps; i++ {
			step(t, "j", chromedp.KeyEvent("j"))
		}
		step(t, "o opens the call", chromedp.KeyEvent("o"), browsertest.WaitJS(`document.querySelector("`+sel+`").open === true`))
		step(t, "the frozen system prompt", chromedp.Click("#prompt-link"), browsertest.WaitJS(`location.pathname.endsWith("/prompt")`),
			chromedp.Text("main", &text, chromedp.ByQuery))
		if !strings.Contains(text, "You are spool, a careful coding agent.") || !strings.Contains(text, "never guess") {
			t.Errorf("prompt page = %q", shorten(text, 200))
		}
	})

	t.Run("branch from a chosen message", func(t *testing.T) {
		active, err := f.st.Conversation(bg, f.demo, store.ViewActive)
		if err != nil {
			t.Fatal(err)
		}
		at := active[2] // after the head and the summary: turn 4's question, not its answer
		step(t, "branch here", chromedp.Navigate(base+"/ui/sessions/"+f.demo), chromedp.WaitVisible("#messages"),
			chromedp.Click(fmt.Sprintf(`form.branchat input[name="at"][value="%d"] ~ button`, at.ID)),
			browsertest.WaitJS(`location.pathname.startsWith("/ui/sessions/") && !location.pathname.endsWith("/`+f.demo+`")`), chromedp.WaitVisible("#messages"))
		check(t, "the branch holds the history up to the message", `document.querySelectorAll("#messages .compaction").length === 1 &&
			document.querySelector("#messages").textContent.includes("file D") && !document.querySelector("#messages").textContent.includes("Reading it.") &&
			document.querySelector(".tree .current .rel").textContent === "branch"`)
	})

	t.Run("export the whole tree", func(t *testing.T) {
		allow, download := downloads(t, ctx)
		step(t, "export", chromedp.Navigate(base+"/ui/sessions/"+f.demo), chromedp.WaitVisible("#actions"),
			allow,
			chromedp.Click("#actions > summary"), chromedp.WaitVisible("#export-btn"),
			chromedp.Click(`#export-form input[name="tree"]`), chromedp.Click("#export-btn"))
		b := download()
		if !strings.Contains(string(b), f.branch) || !strings.Contains(string(b), "what if we rewrite it instead?") {
			t.Errorf("the tree export lacks the branch: %s", shorten(string(b), 200))
		}
	})

	t.Run("delete with confirmation", func(t *testing.T) {
		s, err := f.st.CreateSession(bg, store.NewSession{Title: "Delete me"})
		if err != nil {
			t.Fatal(err)
		}
		step(t, "open the confirmation", chromedp.Navigate(base+"/ui/sessions/"+s.ID), chromedp.WaitVisible("#actions"),
			chromedp.Click("#actions > summary"), chromedp.Click("#actions a.danger"), chromedp.WaitVisible("#confirm-delete"))
		if _, err := f.st.GetSession(bg, s.ID); err != nil {
			t.Fatalf("the confirmation page deleted already: %v", err)
		}
		step(t, "confirm", chromedp.Click("#confirm-delete"), browsertest.WaitJS(`location.pathname === "/ui/"`))
		if _, err := f.st.GetSession(bg, s.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after confirming: %v, want not found", err)
		}
	})

	t.Run("usage", func(t *testing.T) {
		step(t, "open", chromedp.Navigate(base+"/ui/usage"), chromedp.WaitVisible("figure.chart"))
		check(t, "chart and tables", `document.querySelectorAll("figure.chart svg rect").length > 0 &&
			document.querySelector("table.usage").textContent.includes("gpt-4o")`)
	})

	t.Run("phone width and dark", func(t *testing.T) {
		defer step(t, "reset", emulation.ClearDeviceMetricsOverride(), emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}))
		step(t, "emulate a phone, dark", emulation.SetDeviceMetricsOverride(390, 844, 2, true),
			emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}))
		for _, p := range []string{"/ui/", "/ui/sessions/" + f.demo, "/ui/search?q=zebra", "/ui/usage"} {
			step(t, "open "+p, chromedp.Navigate(base+p), chromedp.WaitReady("main", chromedp.ByQuery))
			check(t, p+" fits the phone", `document.documentElement.scrollWidth <= window.innerWidth + 1`)
			check(t, p+" is dark", `getComputedStyle(document.body).backgroundColor === "rgb(15, 18, 22)"`)
		}
		step(t, "open a session", chromedp.Navigate(base+"/ui/sessions/"+f.demo), chromedp.WaitVisible("section.calls"))
		check(t, "the model calls fit the phone", callsFit)
	})

}

// callsFit is true when nothing in the model-calls section is wider than the section: no column
// (latency) scrolled out of view and no cache-break sentence cut off.
const callsFit = `(function(){ var sec = document.querySelector("section.calls"), r = sec.getBoundingClientRect();
	return Array.prototype.every.call(sec.querySelectorAll("*"), function(el){ var b = el.getBoundingClientRect();
		return (b.width === 0 || b.right <= r.right + 1) && el.scrollWidth <= el.clientWidth + 1 }) })()`

// screenshots saves the main pages at desktop and phone width, light and dark
// (SPOOL_SCREENSHOTS=docs/screenshots go test ./web -run TestBrowser).
func screenshots(t *testing.T, ctx context.Context, base string, f *fixture, dir string) {
	addShowcase(t, f)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pages := []struct{ name, path, wait string }{
		{"sessions", "/ui/", "table.sessions"},
		{"session", "/ui/sessions/" + f.demo, ".compaction"},
		{"search", "/ui/search?q=zebra", "ol.hits"},
		{"usage", "/ui/usage", "figure.chart"},
	}
	for _, v := range []struct {
		name          string
		width, height int64
		mobile        bool
		dark          bool
	}{{"desktop", 1280, 900, false, false}, {"phone", 390, 844, true, false}, {"desktop-dark", 1280, 900, false, true}} {
		scheme := "light"
		if v.dark {
			scheme = "dark"
		}
		run(t, ctx, "emulate "+v.name,
			emulation.SetDeviceMetricsOverride(v.width, v.height, 2, v.mobile),
			emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}))
		for _, p := range pages {
			if v.dark && p.name != "session" && p.name != "sessions" {
				continue
			}
			var png []byte
			run(t, ctx, "shoot "+p.name, chromedp.Navigate(base+p.path), chromedp.WaitVisible(p.wait),
				chromedp.Evaluate(`document.querySelectorAll(".compaction > details").forEach(function(d){d.open=true})`, nil),
				chromedp.CaptureScreenshot(&png))
			if err := os.WriteFile(filepath.Join(dir, p.name+"-"+v.name+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	run(t, ctx, "reset", emulation.ClearDeviceMetricsOverride())
}

// addShowcase adds a few sessions and days of usage so the screenshots show a lived-in store.
func addShowcase(t *testing.T, f *fixture) {
	st := f.st
	now := time.Now()
	specs := []struct{ title, source, model, cwd, branch, prompt string }{
		{"Migrate the billing service to pgx", "cli", "claude-sonnet-4", "/home/dev/billing", "pgx-migration", "move the billing queries from lib/pq to pgx"},
		{"", "telegram", "gpt-4o-mini", "", "", "what's on my calendar tomorrow?"},
		{"Nightly triage", "api", "gpt-4o", "/srv/triage", "", "triage the failing CI jobs from last night"},
		{"Flaky lease test", "cli", "claude-sonnet-4", "/home/dev/spool", "fix-lease-flake", "TestLeases fails once in 50 runs on CI"},
		{"Release notes v0.4", "cli", "gpt-4o", "/home/dev/spool", "main", "draft the release notes from the changelog"},
	}
	for i, sp := range specs {
		s, err := st.CreateSession(bg, store.NewSession{Title: sp.title, Source: sp.source, Model: sp.model, Cwd: sp.cwd,
			GitBranch: sp.branch, StartedAt: now.Add(-time.Duration(i+3) * 26 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, st, s.ID, store.Message{Role: store.RoleUser, Content: sp.prompt, Timestamp: now.Add(-time.Duration(i+3) * 25 * time.Hour)},
			store.Message{Role: store.RoleAssistant, Content: "On it.", Timestamp: now.Add(-time.Duration(i+3) * 25 * time.Hour)})
		for d := 0; d < 12; d++ {
			in := int64(20000 + 7000*((d*7+i*3)%5))
			u := store.Usage{InputTokens: in, CacheReadTokens: in * int64(60+(d*13+i*7)%35) / 100, OutputTokens: 900 + int64(d*40), CostUSD: float64(in) / 1e6 * 2.5}
			if err := st.RecordRequest(bg, s.ID, store.RequestRecord{At: now.Add(-time.Duration(d*2+i) * 24 * time.Hour), Model: sp.model, Usage: u}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := st.AcquireLease(bg, f.demo, "pid=4242:host=devbox:start=1:nonce=9f", time.Hour); err != nil {
		t.Fatal(err)
	}
}
