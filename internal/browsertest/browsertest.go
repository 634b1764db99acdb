// Package browsertest starts a real headless Chromium for this module's browser tests and holds
// the few page actions they share.
//
// New finds the browser ($SPOOL_CHROMIUM, else chromium on PATH; missing: the test is skipped
// with how to enable it, or fails when CI=true), starts it with a fresh profile, and reports as
// test errors what hostile or broken pages do: a JavaScript dialog, an uncaught exception, a
// Content Security Policy violation. WaitJS and Click work on the page's current document by
// JavaScript alone, holding no DOM node id a navigation could invalidate between a query and
// its use ("No node with given id found"). Nothing here is imported by non-test code.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// path finds the browser: $SPOOL_CHROMIUM, else Debian's chromium on PATH. Without one the test
// is skipped, or fails under CI=true (.ci/run installs it).
func path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SPOOL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found: .ci/run installs it (apt-get install -y chromium); the browser tests must run in CI")
	}
	t.Skip("chromium not found: install it (apt-get install -y chromium) or set SPOOL_CHROMIUM to run the browser tests")
	return ""
}

// New starts a real headless Chromium with a fresh profile; its context ends with the test, and
// within 5 minutes at most (a hang guard for the whole browser session, not a verdict on speed).
func New(t testing.TB) context.Context {
	t.Helper()
	exe := path(t)
	// The profile directory is removed best effort: Chromium's helper processes can still be
	// writing to it for a moment after the browser exits, which t.TempDir would report.
	profile, err := os.MkdirTemp("", "spool-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA(); _ = os.RemoveAll(profile) })
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	// Any JavaScript dialog means hostile content executed (or the page misbehaved); an
	// uncaught exception is a bug in the page's script; a CSP report means the page itself
	// needs something the policy forbids.
	chromedp.ListenTarget(ctx, func(ev any) {
		switch e := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			t.Errorf("a JavaScript dialog opened: %q", e.Message)
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(true)) }()
		case *runtime.EventExceptionThrown:
			t.Errorf("uncaught exception in the page: %s", e.ExceptionDetails.Error())
		case *cdplog.EventEntryAdded:
			if strings.Contains(e.Entry.Text, "Content Security Policy") {
				t.Errorf("CSP violation: %s", e.Entry.Text)
			}
		}
	})
	if err := chromedp.Run(ctx, cdplog.Enable(), runtime.Enable()); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// WaitJS waits until a JavaScript expression is true: a condition, not a timer. It keeps asking
// across navigations (an expression evaluated while a page unloads fails and is asked again).
func WaitJS(expr string) chromedp.ActionFunc {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 90*time.Second) // a hang guard
		defer cancel()
		var last error
		for {
			var ok bool
			err := chromedp.Evaluate(expr, &ok).Do(ctx)
			if err == nil && ok {
				return nil
			}
			if err != nil {
				last = err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for %s: %w (last error: %v)", shorten(expr, 80), ctx.Err(), last)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// Loaded waits until the current document has finished loading and holds an element matching
// the CSS selector sel: the page a navigation was meant to reach, not the one it leaves (sel
// must name something only the new page has).
func Loaded(sel string) chromedp.ActionFunc {
	return WaitJS(`document.readyState === "complete" && document.querySelector(` + strconv.Quote(sel) + `) !== null`)
}

// Click clicks the first element matching the CSS selector sel on the current document, as
// the page's own script would (HTMLElement.click: a link navigates, a submit button submits its
// form). The click runs after the evaluation has returned, so a navigation it starts cannot
// fail the step; an element that is not there is an error.
func Click(sel string) chromedp.ActionFunc {
	return func(ctx context.Context) error {
		var found bool
		js := `(() => { const el = document.querySelector(` + strconv.Quote(sel) + `); if (!el) return false; setTimeout(() => el.click(), 0); return true })()`
		if err := chromedp.Evaluate(js, &found).Do(ctx); err != nil {
			return fmt.Errorf("click %s: %w", sel, err)
		}
		if !found {
			return fmt.Errorf("click %s: no such element on the page", sel)
		}
		return nil
	}
}

// Text is the visible text of the current document's body (innerText).
func Text(text *string) chromedp.Action {
	return chromedp.Evaluate(`document.body ? document.body.innerText : ""`, text)
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
