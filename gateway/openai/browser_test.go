package openai_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/internal/browsertest"
)

// TestBrowserLoginChromium: a real browser is sent to the login page, signs in by pasting an
// API key, sees that principal's sessions, cannot read the cookie from script (HttpOnly), and
// signs out.
func TestBrowserLoginChromium(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t)
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
	// Every step names the page it waits for by something only that page has, and clicks and
	// reads by script on the current document: a step that held a DOM node across a navigation
	// failed with "No node with given id found" when the page moved under it.
	err := chromedp.Run(ctx,
		chromedp.Navigate(s.url+"/ui/"),
		browsertest.Loaded("#key"),
		chromedp.Location(&loginURL),
		chromedp.SendKeys("#key", "sk-alice", chromedp.ByID), // typed, as a person would
		browsertest.Click(`form[action$="/login"] button[type=submit]`),
		browsertest.Loaded("a.signout"), // the list page: every page of it links to the sign-out page
		browsertest.Text(&body),
		chromedp.Evaluate(`document.cookie`, &cookies),
		browsertest.Click("a.signout"),
		// The sign-out form names itself: the list page's own forms carry a CSRF input and a
		// submit button too.
		browsertest.Loaded(`form[action$="/logout"] input[name=csrf]`),
		browsertest.Click(`form[action$="/logout"] button[type=submit]`),
		browsertest.Loaded("#key"),
		chromedp.Navigate(s.url+"/ui/"),
		browsertest.Loaded("#key"),
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
