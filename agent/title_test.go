package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/provider/fake"
	"github.com/spoolhq/spool/store"
)

// TestAutoTitle: a new session is named after its first exchange from the first ask; later turns
// keep the name; a title the user set is never overwritten, and one the user cleared stays
// cleared; the provenance tells them apart.
func TestAutoTitle(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	ag := newAgent(t, st, fake.New(fake.Config{}), nil)
	ctx := context.Background()
	get := func(id string) store.Session {
		t.Helper()
		s, err := st.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	first := run(t, ag, "", "please fix the tokenizer bug in parse.go, it drops unicode input entirely.")
	s := get(first.SessionID)
	if s.Title != "Please fix the tokenizer bug in parse.go, it" || agent.TitleSource(s) != "auto" {
		t.Fatalf("title %q (%s)", s.Title, agent.TitleSource(s))
	}
	run(t, ag, first.SessionID, "and now something else entirely")
	if got := get(first.SessionID).Title; got != s.Title {
		t.Errorf("a later turn renamed the session to %q", got)
	}

	// The same first ask elsewhere gets the next free number; still automatic.
	second := run(t, ag, "", "please fix the tokenizer bug in parse.go, it drops unicode input entirely.")
	if s2 := get(second.SessionID); s2.Title != s.Title+" #2" || agent.TitleSource(s2) != "auto" {
		t.Errorf("second title %q (%s)", s2.Title, agent.TitleSource(s2))
	}

	// A user title before the first exchange stays; so does a rename after it.
	named, err := ag.CreateSession(ctx, store.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetTitle(ctx, named.ID, "my own name"); err != nil {
		t.Fatal(err)
	}
	run(t, ag, named.ID, "SAY hi")
	if n := get(named.ID); n.Title != "my own name" || agent.TitleSource(n) != "user" {
		t.Errorf("user title became %q (%s)", n.Title, agent.TitleSource(n))
	}
	if err := st.SetTitle(ctx, first.SessionID, "renamed"); err != nil {
		t.Fatal(err)
	}
	if agent.TitleSource(get(first.SessionID)) != "user" {
		t.Error("a renamed session still counts as automatically titled")
	}
	if err := st.SetTitle(ctx, first.SessionID, ""); err != nil {
		t.Fatal(err)
	}
	run(t, ag, first.SessionID, "one more")
	if got := get(first.SessionID).Title; got != "" {
		t.Errorf("a title the user cleared came back as %q", got)
	}
}

func TestTitleFromFirstAsk(t *testing.T) {
	t.Parallel()
	for ask, want := range map[string]string{
		"fix it":                            "Fix it",
		"SAY hello there":                   "Hello there",
		"CALL list_files {}\nwhat is here?": "What is here",
		"   \n\n  deploy the app to staging now!!!":        "Deploy the app to staging now",
		"one two three four five six seven eight nine ten": "One two three four five six seven eight",
		"CALL terminal {}": "",
		"修复解析器":            "修复解析器",
		"a\x1b[2Jb c":      "A [2Jb c",
	} {
		if got := agent.TitleFrom(ask); got != want {
			t.Errorf("TitleFrom(%q) = %q, want %q", ask, got, want)
		}
	}
	if got := agent.TitleFrom(strings.Repeat("x", 100)); got != "" {
		// One word longer than the limit: no title rather than a cut word.
		t.Errorf("an overlong word gave %q", got)
	}
}

// leaseThief is a store whose NextTitle first hands the conversation's turn lease to another
// holder, who names the session: the turn asking for a title has lost its lease without knowing
// it yet (its next renewal would tell it).
type leaseThief struct {
	store.Backend
	t      *testing.T
	stolen bool
	sid    string
}

func (s *leaseThief) NextTitle(ctx context.Context, userID, base string) (string, error) {
	if !s.stolen {
		s.stolen = true
		held, err := s.HeldLeases(ctx)
		if err != nil || len(held) != 1 {
			s.t.Errorf("held leases %+v (%v)", held, err)
			return "", errors.New("no lease to steal")
		}
		h := held[0]
		s.sid = h.ConversationID
		if err := s.ReleaseLease(ctx, store.Lease{ConversationID: h.ConversationID, Holder: h.Holder, Generation: h.Generation}); err != nil {
			s.t.Error(err)
		}
		live, err := s.AcquireLease(ctx, h.ConversationID, "the live turn", time.Minute)
		if err != nil {
			s.t.Error(err)
		}
		if err := s.SetTitle(ctx, h.ConversationID, base, store.WithLease(live)); err != nil {
			s.t.Error(err)
		}
	}
	return s.Backend.NextTitle(ctx, userID, base)
}

// TestAutoTitleFenced: a turn that lost its lease does not write its automatic title over the
// live holder's ("Fix the parser" must not become "Fix the parser #2").
func TestAutoTitleFenced(t *testing.T) {
	t.Parallel()
	inner, _ := newStore(t)
	st := &leaseThief{Backend: inner, t: t}
	ag := newAgent(t, st, fake.New(fake.Config{}), nil)
	_, err := ag.Run(context.Background(), "", "fix the parser", agent.RunOptions{})
	if !st.stolen {
		t.Fatalf("the turn asked for no title (%v)", err)
	}
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("run after losing the lease: %v", err)
	}
	s, err := inner.GetSession(context.Background(), st.sid)
	if err != nil {
		t.Fatal(err)
	}
	if s.Title != "Fix the parser" {
		t.Errorf("title %q: the stale turn overwrote the live holder's title", s.Title)
	}
}
