package storetest

import (
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

// testModelCooldowns: fallback cooldowns are stored, replaced, cleared, and read by another
// handle on the same database.
func testModelCooldowns(t *testing.T, h Harness) {
	st, dsn := h.open(t)
	cs, ok := st.(store.Cooldowns)
	if !ok {
		t.Fatalf("%T does not keep model cooldowns (store.Cooldowns)", st)
	}
	at := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	for _, c := range []store.ModelCooldown{{Model: "main/openai/gpt-4o", Until: at}, {Model: "mini/openai/gpt-4o-mini", Until: at.Add(time.Minute)}} {
		if err := cs.SetModelCooldown(bg, c.Model, c.Until); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.SetModelCooldown(bg, "main/openai/gpt-4o", at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	other := h.reopen(t, dsn).(store.Cooldowns)
	got, err := other.ModelCooldowns(bg)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Model != "main/openai/gpt-4o" || !got[0].Until.Equal(at.Add(time.Hour)) ||
		got[1].Model != "mini/openai/gpt-4o-mini" || !got[1].Until.Equal(at.Add(time.Minute)) {
		t.Fatalf("cooldowns read back = %+v", got)
	}
	if err := other.SetModelCooldown(bg, "main/openai/gpt-4o", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got, err := cs.ModelCooldowns(bg); err != nil || len(got) != 1 || got[0].Model != "mini/openai/gpt-4o-mini" {
		t.Fatalf("after clearing the main model: %+v, %v", got, err)
	}
}
