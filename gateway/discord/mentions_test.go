package discord_test

import (
	"context"
	"testing"

	"github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/internal/platformfake/discordfake"
)

// TestNoMentionsParsed: neither the bot's message nor any edit of it (a streamed reply is
// edits) lets Discord parse a mention the text holds.
func TestNoMentionsParsed(t *testing.T) {
	t.Parallel()
	fake, ad, _, _ := setup(t)
	ctx := context.Background()
	to := platform.Address{Platform: "discord", ChatType: platform.Group, ChatID: "700"}
	texts := []string{"@everyone first", "@everyone @here <@42> <@!43> <@&44> edited", "<@&44> again"}
	id, err := ad.Send(ctx, to, texts[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, txt := range texts[1:] {
		if err := ad.Edit(ctx, to, id, txt); err != nil {
			t.Fatal(err)
		}
	}
	fake.Inspect(func(v discordfake.View) {
		ms := v.Messages("700")
		if len(ms) != 1 || len(ms[0].Sends) != len(texts) {
			t.Fatalf("messages %+v", ms)
		}
		for i, s := range ms[0].Sends {
			if s.Content != texts[i] {
				t.Errorf("call %d: content %q, want %q", i, s.Content, texts[i])
			}
			if len(s.Mentions) != 0 {
				t.Errorf("call %d (%q): Discord parses mentions %q", i, s.Content, s.Mentions)
			}
		}
	})
}
