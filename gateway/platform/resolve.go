package platform

import (
	"context"
	"fmt"
	"strings"
)

// Resolver is an adapter that can name the chat lane of a handoff target (spool handoff
// SESSION --to PLATFORM:CHAT[:THREAD]): it asks its platform what the chat is (a DM, a
// channel, a thread of which parent) and which workspace it is in. An adapter without one is
// resolved by GuessAddress.
type Resolver interface {
	Resolve(ctx context.Context, chatID, threadID string) (Address, error)
}

// GuessAddress names a lane without asking the platform: Telegram's negative chat ids are
// groups (a thread is a forum topic), positive ones DMs; elsewhere a thread makes a Thread
// chat and no thread a Group.
func GuessAddress(platformName, chatID, threadID string) Address {
	a := Address{Platform: platformName, ChatID: chatID, ThreadID: threadID, ChatType: Group}
	switch {
	case platformName == "telegram" && !strings.HasPrefix(chatID, "-"):
		a.ChatType, a.UserID = DM, chatID
	case threadID != "":
		a.ChatType = Thread
	}
	return a
}

// ResolveTarget names the lane of "PLATFORM:CHAT[:THREAD]" through ad (a Resolver when it is
// one, else GuessAddress) and sets user as the lane's user (needed where the policy keys the
// lane per user: a plain group with GroupPerUser, a thread with ThreadPerUser).
func ResolveTarget(ctx context.Context, ad Adapter, p Policy, chatID, threadID, user string) (Address, string, error) {
	var a Address
	if r, ok := ad.(Resolver); ok {
		var err error
		if a, err = r.Resolve(ctx, chatID, threadID); err != nil {
			return Address{}, "", err
		}
	} else {
		a = GuessAddress(ad.Platform(), chatID, threadID)
	}
	if user != "" {
		a.UserID = user
	}
	perUser := (a.ChatType == Group || a.ChatType == Channel) && p.GroupPerUser && a.ThreadID == "" ||
		a.ThreadID != "" && a.ChatType != DM && p.GroupPerUser && p.ThreadPerUser
	if perUser && a.UserID == "" {
		return Address{}, "", fmt.Errorf("%s:%s is a group chat whose sessions are per user (platforms.%s.group_per_user): name the user (--user ID) or hand off to a thread", a.Platform, chatID, a.Platform)
	}
	key, err := p.Key(a)
	if err != nil {
		return Address{}, "", err
	}
	return a, key, nil
}
