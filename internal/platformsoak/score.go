package platformsoak

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/bench"
	"github.com/spoolhq/spool/internal/platformfake/discordfake"
	"github.com/spoolhq/spool/internal/platformfake/slackfake"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/sqlite"
)

// posted is one reply as a fake saw it: where it was posted ("channel/thread") and when.
type posted struct {
	where string
	at    time.Time
}

func msgKey(l *soakLane, n int) string { return fmt.Sprintf("%s#%d", l.name, n) }

// where is the place a lane's replies belong, as posted names it.
func (l *soakLane) where() string { return l.channel + "/" + l.thread }

// collect reads every reply text the fakes were sent, with where and when, and counts the
// "Queued" notices (Discord's ⏳ reactions included) apart.
func (s *soak) collect() (map[string][]posted, int) {
	got := map[string][]posted{}
	queued := 0
	add := func(text string, p posted) {
		if strings.Contains(text, "Queued") {
			queued++
			return
		}
		got[text] = append(got[text], p)
	}
	if tg := s.fk.tg; tg != nil {
		for _, m := range tg.All() {
			add(m.Text, posted{where: fmt.Sprintf("%d/%d", m.Chat, m.Thread), at: m.At})
		}
	}
	if sf := s.fk.sf; sf != nil {
		sf.Inspect(func(v slackfake.View) {
			for _, p := range v.Messages("") {
				add(p.Text, posted{where: p.Channel + "/" + p.ThreadTS, at: p.At})
			}
		})
	}
	if df := s.fk.df; df != nil {
		df.Inspect(func(v discordfake.View) {
			queued += v.ReactionsAdded() // Discord's users are told by a ⏳ reaction
			for _, p := range v.Messages("") {
				add(p.Content, posted{where: p.ChannelID + "/", at: p.At})
			}
		})
	}
	return got, queued
}

// awaitAnswers gives the last messages up to two minutes to be answered (recovery after a
// restart waits out the dead process's claim), stops the gateway and returns the replies.
func (s *soak) awaitAnswers(ctx context.Context) map[string][]posted {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, _ := s.collect()
		missing := 0
		for _, l := range s.lanes {
			for _, m := range l.sent {
				if len(got[msgKey(l, m.n)]) == 0 {
					missing++
				}
			}
		}
		if missing == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err := s.cur.Load().stop(); err != nil {
		s.logf("final stop: %v", err)
	}
	s.rep.Seconds = time.Since(s.start).Seconds()
	got, queued := s.collect()
	s.rep.QueuedNotices = queued
	s.readLimits()
	return got
}

// readLimits copies the fakes' own rate-limit 429s into the report.
func (s *soak) readLimits() {
	if tg := s.fk.tg; tg != nil {
		s.rep.TelegramLimited = tg.Limited("")
	}
	if sf := s.fk.sf; sf != nil {
		sf.Inspect(func(v slackfake.View) { s.rep.SlackLimited = v.Limited("") })
	}
	if df := s.fk.df; df != nil {
		df.Inspect(func(v discordfake.View) {
			s.rep.DiscordLimited, s.rep.DiscordLimitedRoute = v.Limited(""), v.LimitedByRoute()
		})
	}
}

// firstAttempt is when the adapter first tried to post the reply to key, faulted or not.
func (s *soak) firstAttempt(l *soakLane, key string) (t time.Time, ok bool) {
	switch l.platform {
	case "telegram":
		t, ok = s.fk.tg.FirstAttempt(key)
	case "slack":
		s.fk.sf.Inspect(func(v slackfake.View) { t, ok = v.FirstAttempt(key) })
	case "discord":
		s.fk.df.Inspect(func(v discordfake.View) { t, ok = v.FirstAttempt(key) })
	}
	return t, ok
}

// latencies gathers the added latency of answered messages: all of them, those that found
// their chat idle (overall, per platform, split into steps) and the slowest idle ones.
type latencies struct {
	idle, all []time.Duration
	idleBy    map[string][]time.Duration
	steps     map[string][]time.Duration
	stepsBy   map[string]map[string][]time.Duration
	slowest   []slowMsg
}

type slowMsg struct {
	added time.Duration
	what  string
}

// score counts the messages, what was lost, duplicated or posted to the wrong place, and the
// added latency, from the replies got.
func (s *soak) score(got map[string][]posted) {
	lat := &latencies{idleBy: map[string][]time.Duration{}, steps: map[string][]time.Duration{},
		stepsBy: map[string]map[string][]time.Duration{}}
	for _, l := range s.lanes {
		s.rep.Messages += len(l.sent)
		switch l.platform {
		case "telegram":
			s.rep.Telegram += len(l.sent)
		case "slack":
			s.rep.Slack += len(l.sent)
		default:
			s.rep.Discord += len(l.sent)
		}
		s.scoreLane(l, got, lat)
	}
	lat.summarize(&s.rep)
}

// scoreLane scores one lane's messages in the order they were sent. A message found its
// chat idle when it was the lane's first or the reply before it had been posted already.
func (s *soak) scoreLane(l *soakLane, got map[string][]posted, lat *latencies) {
	var prevAnswered time.Time
	for i, m := range l.sent {
		k := msgKey(l, m.n)
		ps := got[k]
		if len(ps) == 0 {
			s.noteLost(l, k, m)
			prevAnswered = time.Time{}
			continue
		}
		s.rep.DuplicatedSends += len(ps) - 1
		if len(ps) > 1 && len(s.rep.Samples) < 10 {
			var at []string
			for _, p := range ps {
				at = append(at, p.at.Sub(s.start).Round(time.Millisecond).String())
			}
			s.rep.Samples = append(s.rep.Samples, fmt.Sprintf("%s sent %d times, at %s", k, len(ps), strings.Join(at, ", ")))
		}
		for _, p := range ps {
			if p.where != l.where() {
				s.rep.KeysMixed++
			}
		}
		ft, ok := s.firstAttempt(l, k)
		if !ok {
			continue
		}
		added := ft.Sub(s.countFrom(l, m.at)) - s.model.get(k)
		lat.all = append(lat.all, added)
		if i == 0 || (!prevAnswered.IsZero() && prevAnswered.Before(m.at)) {
			s.noteIdle(lat, l, k, m, ft, added)
		}
		prevAnswered = ps[0].at
	}
}

// noteLost counts a message never answered, and names the steps it reached in a sample.
func (s *soak) noteLost(l *soakLane, k string, m soakMsg) {
	s.rep.Lost++
	if s.rep.LostBy == nil {
		s.rep.LostBy = map[string]int{}
	}
	s.rep.LostBy[l.platform]++
	if len(s.rep.Samples) >= 10 {
		return
	}
	var seen []string
	mk := s.fk.marks.get(k)
	for _, st := range []string{"recorded", "started", "prepared", "first_delta", "flush"} {
		if t, ok := mk[st]; ok {
			seen = append(seen, fmt.Sprintf("%s +%s", st, t.Sub(m.at).Round(time.Millisecond)))
		}
	}
	if len(seen) == 0 {
		seen = []string{"never recorded"}
	}
	s.rep.Samples = append(s.rep.Samples, fmt.Sprintf("%s lost (sent at %s; %s)", k, m.at.Sub(s.start).Round(time.Millisecond), strings.Join(seen, ", ")))
}

// countFrom is the moment a message's added latency counts from. A Telegram update sent while
// the gateway restarts waits on Telegram's side until the new process polls; Slack's and
// Discord's deliveries fail (or are held) then and count from the delivery that reached the
// new process. For the same measure, such an update counts from the moment the new process
// was up. A Discord message sent during an abrupt restart (graceful ones send none) reaches
// the new process from the channel's history: it counts from the same moment.
func (s *soak) countFrom(l *soakLane, at time.Time) time.Time {
	if l.platform != "telegram" && l.platform != "discord" {
		return at
	}
	from := at
	for _, o := range s.outages {
		if !from.Before(o[0]) && from.Before(o[1]) {
			from = o[1]
			if l.platform == "telegram" {
				s.rep.TelegramDuringRestart++
			} else {
				s.rep.DiscordDuringRestart++
			}
		}
	}
	return from
}

// noteIdle records an idle message's added latency and, when every mark is there, its way to
// the first reply attempt split into steps.
func (s *soak) noteIdle(lat *latencies, l *soakLane, k string, m soakMsg, ft time.Time, added time.Duration) {
	lat.idle = append(lat.idle, added)
	lat.idleBy[l.platform] = append(lat.idleBy[l.platform], added)
	mk := s.fk.marks.get(k)
	cs, called := s.model.started(k)
	var split []string
	if mk != nil && called && !mk["recorded"].IsZero() && !mk["started"].IsZero() && !mk["prepared"].IsZero() &&
		!mk["first_delta"].IsZero() && !mk["flush"].IsZero() {
		for _, st := range []struct {
			name     string
			from, to time.Time
		}{
			{"intake", m.at, mk["recorded"]}, {"queue", mk["recorded"], mk["started"]},
			{"prepare", mk["started"], mk["prepared"]}, {"agent", mk["prepared"], cs},
			{"model_beyond_first_token", cs.Add(s.model.get(k)), mk["first_delta"]},
			{"stream", mk["first_delta"], mk["flush"]}, {"adapter", mk["flush"], ft},
		} {
			d := st.to.Sub(st.from)
			lat.steps[st.name] = append(lat.steps[st.name], d)
			if lat.stepsBy[l.platform] == nil {
				lat.stepsBy[l.platform] = map[string][]time.Duration{}
			}
			lat.stepsBy[l.platform][st.name] = append(lat.stepsBy[l.platform][st.name], d)
			if d >= time.Millisecond {
				split = append(split, fmt.Sprintf("%s %s", st.name, d.Round(time.Millisecond)))
			}
		}
	}
	lat.slowest = append(lat.slowest, slowMsg{added, fmt.Sprintf("%s %s (sent at %s; %s)", k, added.Round(time.Millisecond),
		m.at.Sub(s.start).Round(time.Millisecond), strings.Join(split, ", "))})
}

// summarize writes the latency figures into rep.
func (lat *latencies) summarize(rep *Report) {
	rep.AddedLatency, rep.AddedLatencyAll = bench.Summarize(lat.idle), bench.Summarize(lat.all)
	rep.AddedByPlatform, rep.Steps = map[string]bench.Latency{}, map[string]bench.Latency{}
	for p, xs := range lat.idleBy {
		rep.AddedByPlatform[p] = bench.Summarize(xs)
	}
	for n, xs := range lat.steps {
		rep.Steps[n] = bench.Summarize(xs)
	}
	rep.StepsByPlatform = map[string]map[string]bench.Latency{}
	for p, by := range lat.stepsBy {
		rep.StepsByPlatform[p] = map[string]bench.Latency{}
		for n, xs := range by {
			rep.StepsByPlatform[p][n] = bench.Summarize(xs)
		}
	}
	sort.Slice(lat.slowest, func(i, j int) bool { return lat.slowest[i].added > lat.slowest[j].added })
	for _, s := range lat.slowest[:min(len(lat.slowest), 12)] {
		rep.Slowest = append(rep.Slowest, s.what)
	}
}

// verifyStore checks the store: each lane's key has one session whose transcript is its own
// messages, each question followed by its own answer, each once.
func (s *soak) verifyStore(ctx context.Context) error {
	st, err := sqlite.Open(ctx, s.db, sqlite.Options{})
	if err != nil {
		return fmt.Errorf("platform soak: open the store: %w", err)
	}
	defer st.Close()
	for _, l := range s.lanes {
		ls, err := st.ListSessions(ctx, store.ListOptions{SessionKey: l.key, IncludeChildren: true, Limit: 100})
		if err != nil {
			return fmt.Errorf("platform soak: lane %s: %w", l.name, err)
		}
		if len(ls) > 1 {
			s.rep.KeysMixed += len(ls) - 1 // one lane, several sessions
		}
		seen := map[string]bool{}
		for _, sess := range ls {
			ms, err := st.Conversation(ctx, sess.ID, store.ViewDisplay)
			if err != nil {
				return fmt.Errorf("platform soak: lane %s: %w", l.name, err)
			}
			s.checkTranscript(l, ms, seen)
		}
	}
	return nil
}

// checkTranscript counts, in one of lane l's sessions, questions from other lanes, questions
// asked twice (seen spans the lane's sessions) and questions not followed by their own answer.
func (s *soak) checkTranscript(l *soakLane, ms []store.Message, seen map[string]bool) {
	pending := ""
	for _, m := range ms {
		switch {
		case m.Role == store.RoleUser:
			mm := soakText.FindStringSubmatch(m.Content)
			if mm == nil {
				continue
			}
			if mm[1] != l.name {
				s.rep.KeysMixed++
			}
			k := mm[1] + "#" + mm[2]
			if seen[k] {
				s.rep.DuplicatedTurns++
			}
			seen[k] = true
			if pending != "" {
				s.rep.Interleaved++ // a question whose answer never came before the next
			}
			pending = k
		case m.Role == store.RoleAssistant && len(m.ToolCalls) == 0 && pending != "":
			if m.Content != pending {
				s.rep.Interleaved++
			}
			pending = ""
		}
	}
}
