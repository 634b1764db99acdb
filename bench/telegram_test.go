package bench

import (
	"math/rand/v2"
	"testing"

	"github.com/spoolhq/spool/gateway/telegram/telegramtest"
)

// The soak's fault injector keeps no backlog: ticks while no request comes (a restart, a
// poller waiting out a backoff) leave at most one fault queued per method. Before, every
// tick queued one regardless, so a pause left dozens, which then failed every retry of the
// next calls: minutes of outage late in long runs, and the last messages counted lost.
func TestTelegramFaultsKeepNoBacklog(t *testing.T) {
	t.Parallel()
	api := telegramtest.New(t, tgSoakToken)
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := map[string]int{}
	for range 1000 {
		kinds[tgInject(api, rng)]++
	}
	for _, m := range []string{"getUpdates", "sendMessage", "editMessageText"} {
		if n := api.Pending(m); n != 1 {
			t.Errorf("%s: %d faults queued after 1000 idle ticks, want 1", m, n)
		}
	}
	if kinds["5xx"] != 2 || kinds["429"]+kinds["hang"] != 1 {
		t.Errorf("injected %v, want one of each method's kinds", kinds)
	}
}
