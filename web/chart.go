package web

import "fmt"

// chart is a server-rendered SVG bar chart of prompt tokens per day: each bar is split into the
// part read from the provider's cache and the rest.
type chart struct {
	Width, Height int
	Bars          []bar
	MaxLabel      string
	Empty         bool
}

type bar struct {
	X, W             int
	CachedY, CachedH int
	UncachedY, UncH  int
	Label, Title     string
	ShowLabel        bool
	LabelX, LabelY   int
	OutputY, OutputH int
}

const (
	chartW, chartH = 720, 220
	chartPad       = 24 // room below the bars for day labels
)

func usageChart(days []usageDay) chart {
	c := chart{Width: chartW, Height: chartH}
	var top int64
	for _, d := range days {
		top = max(top, d.Usage.InputTokens+d.Usage.OutputTokens)
	}
	if top == 0 {
		c.Empty = true
		top = 1
	}
	c.MaxLabel = num(top) + " tokens"
	plot := chartH - chartPad
	slot := chartW / max(len(days), 1)
	for i, d := range days {
		u := d.Usage
		scale := func(n int64) int { return int(int64(plot) * n / top) }
		cached := scale(u.CacheReadTokens)
		uncached := scale(u.InputTokens - u.CacheReadTokens)
		out := scale(u.OutputTokens)
		b := bar{X: i*slot + 2, W: max(slot-4, 1)}
		b.CachedY, b.CachedH = plot-cached, cached
		b.UncachedY, b.UncH = plot-cached-uncached, uncached
		b.OutputY, b.OutputH = plot-cached-uncached-out, out
		b.Label = d.Day.Format("01-02")
		b.ShowLabel = i%5 == 0 || i == len(days)-1
		b.LabelX, b.LabelY = b.X+b.W/2, chartH-6
		b.Title = fmt.Sprintf("%s: %s prompt tokens (%s cached, %s), %s output, %s",
			d.Day.Format("2006-01-02"), num(u.InputTokens), num(u.CacheReadTokens), pct(cachedShare(u)),
			num(u.OutputTokens), usd(u.CostUSD))
		c.Bars = append(c.Bars, b)
	}
	return c
}
