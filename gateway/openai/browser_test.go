package openai_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/spoolhq/spool/gateway"
)

// chromium is a headless Chromium for the sign-in test: $SPOOL_CHROMIUM or Debian's chromium.
func chromium(t *testing.T) context.Context {
	t.Helper()
	exe := os.Getenv("SPOOL_CHROMIUM")
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if exe != "" {
			break
		}
		exe, _ = exec.LookPath(name)
	}
	if exe == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium not found: .ci/run installs it (apt-get install -y chromium)")
		}
		t.Skip("chromium not found: install it (apt-get install -y chromium) or set SPOOL_CHROMIUM to run this test")
	}
	profile, err := os.MkdirTemp("", "spool-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(exe), chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(profile))
	ctx, cancelB := chromedp.NewContext(actx)
	// A hang guard for the whole browser session, not a verdict on speed.
	ctx, cancelT := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA(); _ = os.RemoveAll(profile) })
	return ctx
}

// TestBrowserLoginChromium: a real browser is sent to the login page, signs in by pasting an
// API key, sees that principal's sessions, cannot read the cookie from script (HttpOnly), and
// signs out.
func TestBrowserLoginChromium(t *testing.T) {
	t.Parallel()
	ctx := chromium(t)
	home := t.TempDir()
	cfg := fmt.Sprintf("serve:\n  keys:\n    alice: %s\n    bob: %s\n", gateway.HashKey("sk-alice"), gateway.HashKey("sk-bob"))
	s := startServe(t, home, cfg)
	for _, who := range []string{"alice", "bob"} {
		c := client(s, option.WithAPIKey("sk-"+who))
		if _, err := c.Chat.Completions.New(bg, sdk.ChatCompletionNewParams{Model: "spool", Messages: userMsgs("hello from " + who)}); err != nil {
			t.Fatal(err)
		}
	}
	var loginURL, body, cookies, after string
	err := chromedp.Run(ctx,
		chromedp.Navigate(s.url+"/ui/"),
		chromedp.WaitVisible("#key", chromedp.ByID),
		chromedp.Location(&loginURL),
		chromedp.SendKeys("#key", "sk-alice", chromedp.ByID),
		chromedp.Submit("#key", chromedp.ByID),
		chromedp.WaitNotPresent("#key", chromedp.ByID),
		chromedp.Text("body", &body, chromedp.ByQuery),
		chromedp.Evaluate(`document.cookie`, &cookies),
		chromedp.Click(`a.signout`, chromedp.ByQuery), // every page links to the sign-out page
		// Selectors name the sign-out form itself: the list page's own forms carry a CSRF input
		// and a submit button too, and matching those while the click navigates away fails.
		chromedp.WaitReady(`form[action$="/logout"] input[name=csrf]`, chromedp.ByQuery), // the sign-out form carries its CSRF token
		chromedp.WaitVisible(`form[action$="/logout"] button[type=submit]`, chromedp.ByQuery),
		chromedp.Click(`form[action$="/logout"] button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible("#key", chromedp.ByID),
		chromedp.Navigate(s.url+"/ui/"),
		chromedp.WaitVisible("#key", chromedp.ByID),
		chromedp.Location(&after),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(loginURL, "/ui/login") {
		t.Fatalf("not sent to the login page: %s", loginURL)
	}
	// The list shows each session's first message.
	if low := strings.ToLower(body); !strings.Contains(low, "hello from alice") || strings.Contains(low, "hello from bob") {
		t.Fatalf("signed in as alice, the page shows:\n%s", body)
	}
	if strings.Contains(cookies, "spool_session") {
		t.Fatalf("the session cookie is readable from script: %q", cookies)
	}
	if !strings.Contains(after, "/ui/login") {
		t.Fatalf("after sign-out /ui/ went to %s, want the login page", after)
	}
}
