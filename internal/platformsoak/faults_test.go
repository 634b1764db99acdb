package platformsoak

import (
	"math/rand/v2"
	"testing"

	"github.com/spoolhq/spool/internal/platformfake/discordfake"
	"github.com/spoolhq/spool/internal/platformfake/slackfake"
	"github.com/spoolhq/spool/internal/platformfake/telegramfake"
)

// The soak's fault injector keeps no backlog: ticks while no request comes (a restart, a
// poller waiting out a backoff) leave at most one fault queued per method. The Telegram
// soak's injector queued one every tick regardless, so a pause left dozens, which then
// failed every retry of the next calls: minutes of outage late in long runs, and the last
// messages counted lost.
func TestSoakFaultsKeepNoBacklog(t *testing.T) {
	t.Parallel()
	tg := telegramfake.New(t, tgSoakToken)
	sf, err := slackfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	df, err := discordfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	kinds := soakFaultKinds(soakFakes{tg: tg, sf: sf, df: df})
	rng := rand.New(rand.NewPCG(1, 2))
	injected := map[string]int{}
	for range 2000 {
		injected[injectFault(kinds, rng)]++
	}
	for _, m := range []string{"getUpdates", "sendMessage", "editMessageText"} {
		if n := tg.Pending(m); n != 1 {
			t.Errorf("telegram %s: %d faults queued after 2000 idle ticks, want 1", m, n)
		}
	}
	sf.Inspect(func(v slackfake.View) {
		for _, m := range []string{"chat.postMessage", "chat.update"} {
			if n := v.Faults(m); n != 1 {
				t.Errorf("slack %s: %d faults queued, want 1", m, n)
			}
		}
	})
	df.Inspect(func(v discordfake.View) {
		for _, m := range []string{"POST messages", "PATCH messages"} {
			if n := v.Faults(m); n != 1 {
				t.Errorf("discord %s: %d faults queued, want 1", m, n)
			}
		}
	})
	if injected["discord_drop"] != 1 {
		t.Errorf("dropped the Discord socket %d times in one idle burst, want 1 (at most one per 30 s)", injected["discord_drop"])
	}
}
