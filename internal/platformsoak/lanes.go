package platformsoak

import (
	"fmt"

	plat "github.com/spoolhq/spool/gateway/platform"
	"github.com/spoolhq/spool/gateway/slack"
	"github.com/spoolhq/spool/internal/platformfake/discordfake"
)

// buildLanes lays out the chat lanes: the platforms in turn; on each, DMs, channels or groups
// (two users share one: two lanes), threads or forum topics (two users share one lane;
// Telegram: two topics share a forum). Discord's channels are created on its fake.
func buildLanes(cfg Config, fk soakFakes) ([]*soakLane, error) {
	if fk.df != nil {
		fk.df.AddChannel("500000", discordfake.GuildText, "")
	}
	np := len(cfg.Platforms)
	lanes := make([]*soakLane, 0, cfg.Lanes)
	for i := range cfg.Lanes {
		p, kind := cfg.Platforms[i%np], (i/np)%3
		var (
			l   *soakLane
			a   plat.Address
			err error
		)
		switch p {
		case "telegram":
			l, a = telegramLane(i, np, kind)
		case "slack":
			l, a = slackLane(i, kind, fk.sf.TeamID)
		default:
			l, a = discordLane(i, kind, fk.df)
		}
		if l.key, err = plat.DefaultPolicy.Key(a); err != nil {
			return nil, fmt.Errorf("platform soak: lane %s: %w", l.name, err)
		}
		lanes = append(lanes, l)
	}
	return lanes, nil
}

// telegramLane is lane i of kind 0 (a DM), 1 (a member of a group of two, each their own
// session) or 2 (a forum topic two users share; two topics per forum).
func telegramLane(i, np, kind int) (*soakLane, plat.Address) {
	l := &soakLane{platform: "telegram", name: fmt.Sprintf("t%d", i), users: []string{fmt.Sprint(7000 + i)}}
	a := plat.Address{Platform: "telegram", UserID: l.users[0]}
	switch kind {
	case 0:
		l.tgChat, l.tgType = int64(7000+i), "private"
		a.ChatType, a.ChatID = plat.DM, fmt.Sprint(l.tgChat)
	case 1:
		l.tgChat, l.tgType = int64(-1000-i/(6*np)), "supergroup"
		a.ChatType, a.ChatID = plat.Group, fmt.Sprint(l.tgChat)
	default:
		l.tgChat, l.tgTopic, l.tgType = int64(-2000-i/(6*np)), int64(10+i), "supergroup"
		l.users = append(l.users, fmt.Sprint(7000+i+1))
		a = plat.Address{Platform: "telegram", ChatType: plat.Thread, ChatID: fmt.Sprint(l.tgChat), ThreadID: fmt.Sprint(l.tgTopic)}
	}
	l.channel, l.thread = fmt.Sprint(l.tgChat), fmt.Sprint(l.tgTopic)
	return l, a
}

// slackLane is lane i of kind 0 (a DM), 1 (a user in a channel of six) or 2 (a thread two
// users share).
func slackLane(i, kind int, team string) (*soakLane, plat.Address) {
	l := &soakLane{platform: "slack", slack: true, name: fmt.Sprintf("s%d", i)}
	switch kind {
	case 0:
		l.channel, l.dm, l.users = fmt.Sprintf("D%04d", i), true, []string{fmt.Sprintf("U%04d", i)}
	case 1:
		l.channel, l.users = fmt.Sprintf("C%04d", i/6), []string{fmt.Sprintf("U%04d", i)}
	default:
		// threads spread over channels as the channel lanes are (i/6): Slack takes about
		// one post a second per channel, and every thread lane in one channel asked for
		// about that — with the notices and the faults' retries, a backlog no client
		// could clear once the fake enforced the limit
		l.channel, l.thread, l.users = fmt.Sprintf("C9%03d", i/6), fmt.Sprintf("1800000000.%06d", i), []string{fmt.Sprintf("U%04d", i), fmt.Sprintf("U%04d", i+1)}
	}
	ct := map[bool]string{true: "im", false: "channel"}[l.dm]
	return l, slack.Inbound{TeamID: team, Channel: l.channel, ChannelType: ct, ThreadTS: l.thread, User: l.users[0]}.Event().Address
}

// discordLane is lane i of kind 0 (a DM), 1 (a user in a channel of six) or 2 (a public
// thread two users share); its channel is created on the fake.
func discordLane(i, kind int, df *discordfake.Server) (*soakLane, plat.Address) {
	l := &soakLane{platform: "discord", name: fmt.Sprintf("d%d", i)}
	switch kind {
	case 0:
		l.channel, l.dm, l.users = fmt.Sprintf("60%04d", i), true, []string{fmt.Sprintf("4%04d", i)}
		df.AddChannel(l.channel, discordfake.DMChannel, "")
	case 1:
		l.channel, l.users = fmt.Sprintf("50%04d", i/6), []string{fmt.Sprintf("4%04d", i)}
		df.AddChannel(l.channel, discordfake.GuildText, "")
	default:
		l.channel, l.users = fmt.Sprintf("70%04d", i), []string{fmt.Sprintf("4%04d", i), fmt.Sprintf("4%04d", i+1)}
		df.AddChannel(l.channel, discordfake.PublicThread, "500000")
	}
	a := plat.Address{Platform: "discord", ChatType: plat.Group, ChatID: l.channel, UserID: l.users[0]}
	switch {
	case l.dm:
		a.ChatType = plat.DM
	case kind == 2:
		a = plat.Address{Platform: "discord", ChatType: plat.Thread, ChatID: "500000", ThreadID: l.channel}
	}
	return l, a
}
