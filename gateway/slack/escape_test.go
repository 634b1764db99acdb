package slack_test

import (
	"context"
	"strings"
	"testing"

	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/gateway/platform/platformtest"
	"github.com/spoolhq/spool/internal/platformfake/slackfake"
)

// hostile is model text written in Slack's own syntax: a channel-wide ping, an @here, a user
// mention and a link whose label hides where it goes.
const hostile = "<!channel> <!here> <@U0BOSS> see <https://evil.example|click> & more"

// escaped is how Slack must receive it: every &, < and > as its entity, so Slack shows the
// characters instead of pinging or linking.
const escaped = "&lt;!channel&gt; &lt;!here&gt; &lt;@U0BOSS&gt; see &lt;https://evil.example|click&gt; &amp; more"

// TestSendAndEditEscaped: the adapter's post and every later edit of it (a streamed reply)
// reach Slack escaped, whatever the text holds.
func TestSendAndEditEscaped(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, text, want string }{
		{"hostile", hostile, escaped},
		{"already an entity", "a &lt; b", "a &amp;lt; b"},
		{"plain", "just words, *bold* and `code`", "just words, *bold* and `code`"},
	}
	e := setup(t, false)
	to := platform.Address{Platform: "slack", ChatType: platform.Group, ChatID: "C0ESC"}
	for _, c := range cases {
		id, err := e.ad.Send(context.Background(), to, "first: "+c.text)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.ad.Edit(context.Background(), to, id, "edited: "+c.text); err != nil {
			t.Fatal(err)
		}
		e.fake.Inspect(func(v slackfake.View) {
			for _, m := range v.Messages("C0ESC") {
				if m.TS != id {
					continue
				}
				if got, want := strings.Join(m.Texts, "|"), "first: "+c.want+"|edited: "+c.want; got != want {
					t.Errorf("%s: Slack received %q, want %q", c.name, got, want)
				}
			}
		})
	}
}

// TestReplyEscapedEndToEnd: a model reply in Slack syntax, through the real router, is posted
// escaped.
func TestReplyEscapedEndToEnd(t *testing.T) {
	t.Parallel()
	fake, err := slackfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	s := serveSlack(t, fake, platformtest.Options{}, false)
	s.say(t, &slackfake.Message{Channel: "C0CHAN", User: "U1", Text: "SAY " + hostile}, 0)
	s.env.Idle(t)
	fake.Inspect(func(v slackfake.View) {
		ms := v.Messages("C0CHAN")
		if len(ms) != 1 {
			t.Fatalf("%d messages: %+v", len(ms), ms)
		}
		for _, txt := range ms[0].Texts {
			if strings.ContainsAny(txt, "<>") { // a streamed edit too
				t.Errorf("Slack received %q unescaped", txt)
			}
		}
		if ms[0].Text != escaped {
			t.Errorf("final text %q, want %q", ms[0].Text, escaped)
		}
	})
}
