package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Scale targets on SQLite; PostgreSQL's are twice as wide (scaleSlack).
const (
	// scaleAppendGrowth: append p99 at the largest size within this factor of the smallest's.
	scaleAppendGrowth = 1.5
	// scaleResumeMs: resuming the long session (what the model sees), p99, at every size.
	scaleResumeMs = 50.0
	// scaleSearchMs: search p99 at the largest size (the target is set for a million messages;
	// a smaller largest size is held to it too).
	scaleSearchMs = 50.0
)

// scaleSlack widens the targets for a backend: PostgreSQL within 2x of SQLite.
func scaleSlack(backend string) float64 {
	if backend == "postgres" {
		return 2
	}
	return 1
}

// scaleTargets judges the curve: how append p99 grows from the smallest size to the largest,
// resume p99 at each size, and search p99 at the largest size.
func scaleTargets(backend string, points []ScalePoint) []TargetLine {
	if len(points) == 0 {
		return nil
	}
	k := scaleSlack(backend)
	first, last := points[0], points[len(points)-1]
	var out []TargetLine
	if len(points) > 1 && first.AppendP99 > 0 {
		g := round3(last.AppendP99 / first.AppendP99)
		out = append(out, TargetLine{
			Name:   fmt.Sprintf("append p99 at %d messages over %d", last.Messages, first.Messages),
			Value:  g,
			Target: fmt.Sprintf("<= %.1fx", scaleAppendGrowth*k),
			Met:    g <= scaleAppendGrowth*k,
		})
	}
	for _, p := range points {
		out = append(out, TargetLine{
			Name:   fmt.Sprintf("resume p99 at %d messages (ms)", p.Messages),
			Value:  p.ResumeP99,
			Target: fmt.Sprintf("< %.0f ms", scaleResumeMs*k),
			Met:    p.ResumeP99 < scaleResumeMs*k,
		})
	}
	return append(out, TargetLine{
		Name:   fmt.Sprintf("search p99 at %d messages (ms)", last.Messages),
		Value:  last.SearchP99,
		Target: fmt.Sprintf("< %.0f ms", scaleSearchMs*k),
		Met:    last.SearchP99 < scaleSearchMs*k,
	})
}

// RunScale runs the benchmark and prints the curve as a table, or its report as JSON. A missed
// target is an error (after the report is printed).
func RunScale(ctx context.Context, cfg ScaleConfig, asJSON bool, stdout io.Writer) error {
	rep, err := Scale(ctx, cfg)
	if err != nil {
		return err
	}
	if asJSON {
		if err := writeReport(stdout, rep, nil); err != nil {
			return err
		}
	} else {
		writeScaleTable(stdout, rep)
	}
	if !rep.TargetsMet {
		var missed []string
		for _, t := range rep.Targets {
			if !t.Met {
				missed = append(missed, fmt.Sprintf("%s: %.3g, target %s", t.Name, t.Value, t.Target))
			}
		}
		return fmt.Errorf("%w: targets missed: %s", ErrVerify, strings.Join(missed, "; "))
	}
	return nil
}

// writeScaleTable prints one row a size and one line a target.
func writeScaleTable(w io.Writer, rep *ScaleReport) {
	fmt.Fprintf(w, "%s, a long session of %d messages beside the many sessions\n\n", rep.Backend, rep.LongSession)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "messages\tsessions\tappend p50\tp99\tresume p50\tp99\tsearch p50\tp99\tlist p99\ton disk\tresident\t")
	for _, p := range rep.Points {
		fmt.Fprintf(tw, "%d\t%d\t%.2f ms\t%.2f ms\t%.2f ms\t%.2f ms\t%.2f ms\t%.2f ms\t%.2f ms\t%d MB\t%d MB\t\n",
			p.Messages, p.Sessions, p.AppendP50, p.AppendP99, p.ResumeP50, p.ResumeP99, p.SearchP50, p.SearchP99,
			p.ListP99, p.DBBytes>>20, p.RSSBytes>>20)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, t := range rep.Targets {
		verdict := "met"
		if !t.Met {
			verdict = "NOT MET (grows faster than its target)"
		}
		fmt.Fprintf(w, "%s: %.3g, target %s: %s\n", t.Name, t.Value, t.Target, verdict)
	}
}
