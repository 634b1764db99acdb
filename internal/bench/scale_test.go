package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// The verdicts judge the figures they are given: a good curve meets every target, and each
// measure made to grow too fast (or PostgreSQL past twice SQLite's limits) misses its own.
func TestScaleTargets(t *testing.T) {
	t.Parallel()
	good := func() []ScalePoint {
		return []ScalePoint{
			{Messages: 1000, AppendP99: 2, ResumeP99: 5, SearchP99: 3},
			{Messages: 1000000, AppendP99: 2.5, ResumeP99: 6, SearchP99: 30},
		}
	}
	cases := []struct {
		name    string
		backend string
		bend    func(ps []ScalePoint)
		missed  string // the target that must miss ("" = all met)
	}{
		{"good", "sqlite", func([]ScalePoint) {}, ""},
		{"append grows", "sqlite", func(ps []ScalePoint) { ps[1].AppendP99 = 3.1 }, "append p99"},
		{"slow resume", "sqlite", func(ps []ScalePoint) { ps[0].ResumeP99 = 51 }, "resume p99 at 1000"},
		{"slow search", "sqlite", func(ps []ScalePoint) { ps[1].SearchP99 = 50 }, "search p99"},
		{"postgres within twice", "postgres", func(ps []ScalePoint) { ps[1].SearchP99, ps[1].AppendP99 = 99, 5.9 }, ""},
		{"postgres slow search", "postgres", func(ps []ScalePoint) { ps[1].SearchP99 = 101 }, "search p99"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ps := good()
			c.bend(ps)
			ts := scaleTargets(c.backend, ps)
			var missed []string
			for _, tl := range ts {
				if !tl.Met {
					missed = append(missed, tl.Name)
				}
			}
			switch {
			case c.missed == "" && len(missed) > 0:
				t.Errorf("missed %v, want every target met", missed)
			case c.missed != "" && (len(missed) != 1 || !strings.HasPrefix(missed[0], c.missed)):
				t.Errorf("missed %v, want only %q", missed, c.missed)
			}
			if allMet(ts) != (c.missed == "") {
				t.Errorf("allMet = %v", allMet(ts))
			}
		})
	}
}

// The control (every search slowed past its limit) fails the run whatever the machine: a
// small store, measured for real, and a verdict that must be "not met".
func TestScaleControlFails(t *testing.T) {
	t.Parallel()
	cfg := ScaleConfig{Dir: t.TempDir(), Sizes: []int{100, 300}, Long: 1500, SlowSearch: 60 * time.Millisecond, Samples: 5}
	var out strings.Builder
	err := RunScale(context.Background(), cfg, false, &out)
	if !errors.Is(err, ErrVerify) || !strings.Contains(err.Error(), "search p99") {
		t.Fatalf("control run: err %v, want a missed search target", err)
	}
	table := out.String()
	for _, want := range []string{"messages", "300", "NOT MET"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	rep, err := Scale(context.Background(), ScaleConfig{Dir: t.TempDir(), Sizes: []int{50}, Long: 20, Samples: 3})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Points[0]
	if p.Total < 50+20 || p.ResumeMessages == 0 || p.ResumeMessages > 20 || p.DBBytes <= 0 || p.Sessions < 2 {
		t.Errorf("point %+v: want the store's rows counted, the long session resumed, its size on disk", p)
	}
}
