package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/store"
)

// clear is /clear: the screen is emptied and the next message starts a new session; the one
// left stays stored and resumable.
func (c *chat) clear() {
	old := c.sid
	c.sid = ""
	switch {
	case c.ui != nil:
		c.ui.clearScreen()
	case c.tty && isTerminal(c.a.stdout) && os.Getenv("TERM") != "dumb":
		fmt.Fprint(c.a.stdout, ansi.EraseEntireScreen+ansi.CursorHomePosition)
	}
	if old == "" {
		fmt.Fprintln(c.a.stdout, "New session: it starts with your next message.")
		return
	}
	fmt.Fprintf(c.a.stdout, "New session: it starts with your next message (/resume %s goes back).\n", old)
}

// switchModel is /model: without a name it says which model the chat talks to; with one, the
// chat talks to that model from the next message on, on the same provider, and the session
// records it so a resume goes on with it. The session's stored system prompt is not rebuilt;
// the provider's cache of the conversation does not carry over to another model, and the next
// call records that cache break (reason "model", see /usage).
func (c *chat) switchModel(ctx context.Context, name string) error {
	if name == "" {
		th := c.ag.Threshold()
		fmt.Fprintf(c.a.stdout, "Model: %s (window %d tokens, compacts at %d). /model NAME switches this session to another.\n",
			visible(c.ag.Model()), th.Model.ContextLength, th.Tokens)
		return nil
	}
	if strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return errors.New("/model takes one model name, without spaces")
	}
	cfg, err := c.a.config()
	if err != nil {
		return err
	}
	// The new model's own window, not one given for the old.
	window, err := contextWindow(cfg, modelFlags{model: name}, name)
	if err != nil {
		return err
	}
	ag, err := c.ag.WithModel(name, window)
	if err != nil {
		return err
	}
	c.ag, c.switched = ag, name
	if err := c.recordModel(ctx); err != nil {
		return err
	}
	th := ag.Threshold()
	fmt.Fprintf(c.a.stdout, "Model: %s from your next message (window %d tokens, compacts at %d).\n", visible(name), th.Model.ContextLength, th.Tokens)
	return nil
}

// recordModel stores on the chat's session (when it has one) the model /model chose and its
// window, so a resume goes on with them.
func (c *chat) recordModel(ctx context.Context) error {
	if c.sid == "" || c.switched == "" {
		return nil
	}
	s, err := c.st.GetSession(ctx, c.sid)
	if err != nil {
		return fmt.Errorf("record the model on session %s: %w", c.sid, err)
	}
	window := c.ag.Threshold().Model.ContextLength
	if m, w := agent.SessionSettings(s); s.Model == c.switched && m == c.switched && w == window {
		return nil
	}
	mc, err := agent.WithSettings(s.ModelConfig, c.switched, window)
	if err != nil {
		return fmt.Errorf("record the model on session %s: %w", c.sid, err)
	}
	model := c.switched
	if err := c.st.UpdateSession(ctx, c.sid, store.SessionPatch{Model: &model, ModelConfig: mc}); err != nil {
		return fmt.Errorf("record the model on session %s: %w", c.sid, err)
	}
	return nil
}
