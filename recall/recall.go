package recall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spoolhq/spool/store"
)

// Output bounds.
const (
	// searchCandidates is how many full-text hits discover considers before grouping.
	searchCandidates = 300
	// largeSession is the message count above which read shows only the ends of a session.
	largeSession = 60
	readHead     = 20
	readTail     = 10
	// contentBudget is shared by the message bodies of one response, so a window over huge
	// messages cannot flood the context; each body keeps at least minContent and at most
	// maxContent characters. Bookends keep bookendContent.
	contentBudget  = 24_000
	minContent     = 120
	maxContent     = 4_000
	bookendContent = 300
	// fullMessages bounds the messages of all results together under detail=full.
	fullMessages = 100
	bookendCount = 3
	previewChars = 160
	// browsePages bounds how many listing pages browse reads to fill its results.
	browsePages = 5
)

// HiddenSources never appear in discover or browse: their sessions are machinery, not
// conversations. DemotedSources rank below interactive results.
var (
	HiddenSources  = []string{"kanban", SubagentSource, "tool"}
	DemotedSources = []string{"cron"}
)

// SubagentSource is the source of delegated sub-agent sessions: hidden unless a request asks
// for them (Request.Subagents).
const SubagentSource = "subagent"

var defaultRoles = []string{store.RoleUser, store.RoleAssistant}

// Message is one message as recall shows it.
type Message struct {
	ID       int64  `json:"id"`
	Role     string `json:"role"`
	ToolName string `json:"tool_name,omitempty"`
	When     string `json:"when"`
	Content  string `json:"content"`
	// Anchor marks the message a window is centred on.
	Anchor bool `json:"anchor,omitempty"`
	// Archived marks a message compaction removed from its session's active context.
	Archived bool `json:"archived,omitempty"`
	Summary  bool `json:"summary,omitempty"`
}

// Result is one session discover found.
type Result struct {
	SessionID string `json:"session_id"`
	Title     string `json:"title"`
	When      string `json:"when"`
	Source    string `json:"source"`
	Snippet   string `json:"snippet"`
	// MatchedTerms are the query's words, phrases and identifiers the matching message holds
	// (a word through any of its forms): a question need not match every word, and this says
	// which ones the result answers.
	MatchedTerms []string `json:"matched_terms,omitempty"`
	// MatchMessageID is the anchor to scroll around (with session_id).
	MatchMessageID int64  `json:"match_message_id"`
	MatchedRole    string `json:"matched_role"`
	// Archived says the matching message was compacted out of its session's active context.
	Archived       bool      `json:"archived"`
	MessagesBefore int       `json:"messages_before"`
	MessagesAfter  int       `json:"messages_after"`
	Detail         string    `json:"detail"` // "full" or "compact"
	Messages       []Message `json:"messages"`
	BookendStart   []Message `json:"bookend_start"`
	BookendEnd     []Message `json:"bookend_end"`
	// Summary (detail=summary) is a model's focused summary of the session around the match,
	// for the query; SummarySpan the first and last message id it was written from.
	Summary     string  `json:"summary,omitempty"`
	SummarySpan []int64 `json:"summary_span,omitempty"`
	// SummaryError says why this result shows raw messages although a summary was asked for.
	SummaryError string `json:"summary_error,omitempty"`
}

// Discovery is discover's answer.
type Discovery struct {
	Success bool     `json:"success"`
	Mode    string   `json:"mode"`
	Query   string   `json:"query"`
	Results []Result `json:"results"`
	Count   int      `json:"count"`
	Message string   `json:"message"`
	// Note explains a detail=summary answer, or why it fell back to raw matches.
	Note string `json:"note,omitempty"`
}

// SessionMeta describes the session a scroll or read shows.
type SessionMeta struct {
	Title     string `json:"title"`
	When      string `json:"when"`
	Source    string `json:"source"`
	Model     string `json:"model"`
	EndReason string `json:"end_reason,omitempty"`
}

// Scrolled is scroll's answer. Fewer than Window messages on a side means the session's start
// or end was reached.
type Scrolled struct {
	Success         bool        `json:"success"`
	Mode            string      `json:"mode"`
	SessionID       string      `json:"session_id"`
	SessionMeta     SessionMeta `json:"session_meta"`
	AroundMessageID int64       `json:"around_message_id"`
	Window          int         `json:"window"`
	Messages        []Message   `json:"messages"`
	MessagesBefore  int         `json:"messages_before"`
	MessagesAfter   int         `json:"messages_after"`
	Warning         string      `json:"warning,omitempty"`
}

// Reading is read's answer. Omitted counts the middle messages a large session leaves out.
type Reading struct {
	Success      bool        `json:"success"`
	Mode         string      `json:"mode"`
	SessionID    string      `json:"session_id"`
	SessionMeta  SessionMeta `json:"session_meta"`
	MessageCount int         `json:"message_count"`
	Messages     []Message   `json:"messages"`
	Omitted      int         `json:"omitted"`
	Message      string      `json:"message,omitempty"`
}

// SessionItem is one session browse lists.
type SessionItem struct {
	SessionID    string `json:"session_id"`
	Title        string `json:"title"`
	Source       string `json:"source"`
	StartedAt    string `json:"started_at"`
	LastActive   string `json:"last_active"`
	MessageCount int    `json:"message_count"`
	Preview      string `json:"preview"`
	// TipSessionID is the live continuation when the session was rotated by compression.
	TipSessionID string `json:"tip_session_id,omitempty"`
}

// Browsing is browse's answer.
type Browsing struct {
	Success bool          `json:"success"`
	Mode    string        `json:"mode"`
	Results []SessionItem `json:"results"`
	Count   int           `json:"count"`
	Message string        `json:"message"`
}

// Failure is every mode's error answer.
type Failure struct {
	Success bool   `json:"success"`
	Mode    string `json:"mode,omitempty"`
	Error   string `json:"error"`
}

// Run parses the tool arguments, runs the request for the calling session and returns the JSON
// the model reads. It never fails: errors become a Failure payload.
// sum serves detail=summary; nil falls back to raw matches with a note.
func Run(ctx context.Context, st Store, current string, args json.RawMessage, sum ...Summarizer) []byte {
	return RunDetail(ctx, st, current, args, "", sum...)
}

// RunDetail is Run with the detail used when the arguments name none (config recall.detail).
func RunDetail(ctx context.Context, st Store, current string, args json.RawMessage, defaultDetail string, sum ...Summarizer) []byte {
	req, err := ParseArgsDetail(current, args, defaultDetail)
	if err != nil {
		return encode(Failure{Mode: req.Mode(), Error: err.Error()})
	}
	var v any
	if req.Summary && req.Mode() == ModeDiscover {
		var d Discovery
		d, err = Discover(ctx, st, req)
		if err == nil {
			var s Summarizer
			if len(sum) > 0 {
				s = sum[0]
			}
			summarize(ctx, st, s, req, &d)
		}
		v = d
	} else {
		v, err = Do(ctx, st, req)
	}
	if err != nil {
		return encode(Failure{Mode: req.Mode(), Error: err.Error()})
	}
	return encode(v)
}

// Do runs req in the mode its arguments select and returns that mode's answer.
func Do(ctx context.Context, st Store, req Request) (any, error) {
	switch req.Mode() {
	case ModeScroll:
		return Scroll(ctx, st, req)
	case ModeRead:
		return Read(ctx, st, req)
	case ModeBrowse:
		return Browse(ctx, st, req)
	}
	return Discover(ctx, st, req)
}

func encode(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only unencodable values fail, and every answer is plain structs of strings and numbers.
		return []byte(`{"success":false,"error":"encode answer: ` + strings.ReplaceAll(err.Error(), `"`, `'`) + `"}`)
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// Discover finds sessions about req.Query: a session whose title is the query first, then
// full-text hits, one per lineage, the top one expanded.
func Discover(ctx context.Context, st Store, req Request) (Discovery, error) {
	lin, err := newLineage(ctx, st, req.Current)
	if err != nil {
		return Discovery{}, err
	}
	sc, err := scopeOf(ctx, lin, req)
	if err != nil {
		return Discovery{}, err
	}
	out := Discovery{Success: true, Mode: ModeDiscover, Query: req.Query, Results: []Result{}}
	limit := clamp(req.Limit, 1, MaxLimit)
	window := clamp(req.Window, 1, MaxWindow)
	roles := req.roles()
	taken := map[string]bool{} // lineage roots already in the results
	type pick struct {
		sess store.Session
		hit  store.SearchHit
	}
	var picks []pick

	if s, ok := titleMatch(ctx, st, req.Query); ok && !slices.Contains(req.hidden(), s.Source) {
		root, err := lin.root(ctx, s.ID)
		if err != nil {
			return Discovery{}, err
		}
		if !lin.inLiveContext(s, root) && lin.admits(sc, s, root) {
			taken[root] = true
			picks = append(picks, pick{sess: s})
		}
	}

	hits, err := st.Search(ctx, store.SearchQuery{
		Text: req.Query, Roles: roles, ExcludeSources: req.hidden(),
		Limit: searchCandidates, Sort: sortOf(req.Sort), NoContext: true,
	})
	if err != nil {
		return Discovery{}, err
	}
	slices.SortStableFunc(hits, func(a, b store.SearchHit) int {
		return boolCmp(slices.Contains(req.demoted(), a.Source), slices.Contains(req.demoted(), b.Source))
	})
	// Branches and compaction copy messages (same role, time and text): a copy of a message the
	// caller already sees is left out, and a message found in several lineages is shown once.
	type candidate struct {
		hit  store.SearchHit
		sess store.Session
		root string
		key  string
		live bool
	}
	var cands []candidate
	keyRoots := map[string][]string{}
	liveKeys := map[string]bool{}
	for _, h := range hits {
		root, err := lin.root(ctx, h.SessionID)
		if errors.Is(err, store.ErrNotFound) { // deleted since the search
			continue
		} else if err != nil {
			return Discovery{}, err
		}
		s, err := lin.session(ctx, h.SessionID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return Discovery{}, err
		}
		if !lin.admits(sc, s, root) {
			continue
		}
		c := candidate{hit: h, sess: s, root: root, key: copyKey(h)}
		c.live = inModelView(h) && lin.inLiveContext(s, root)
		if c.live {
			liveKeys[c.key] = true
		}
		keyRoots[c.key] = append(keyRoots[c.key], root)
		cands = append(cands, c)
	}
	for _, c := range cands {
		if len(picks) >= limit {
			break
		}
		if c.live || liveKeys[c.key] || taken[c.root] ||
			slices.ContainsFunc(keyRoots[c.key], func(r string) bool { return taken[r] }) {
			continue
		}
		taken[c.root] = true
		picks = append(picks, pick{sess: c.sess, hit: c.hit})
	}

	budget := contentBudget
	if req.Full && len(picks) > 1 {
		budget /= len(picks)
		window = min(window, max(1, (fullMessages/len(picks)-1)/2))
	}
	for i, p := range picks {
		full := i == 0 || req.Full
		var r Result
		if p.hit.MessageID == 0 {
			r, err = titleResult(ctx, st, p.sess, window, budget)
		} else {
			r, err = hitResult(ctx, st, p.sess, p.hit, window, roles, full, budget)
		}
		if err != nil {
			return Discovery{}, err
		}
		out.Results = append(out.Results, r)
	}
	out.Count = len(out.Results)
	if out.Count == 0 {
		out.Message = NoMatchMessage
	} else {
		out.Message = fmt.Sprintf("Found %d session(s), best match first; matched_terms lists which of the query's words each "+
			"result holds. The top result shows up to %d messages on each side of the match; "+
			"pass session_id and around_message_id to scroll, or session_id alone to read a session.", out.Count, window)
	}
	return out, nil
}

// NoMatchMessage answers a search that found nothing: how to search wider, so the search goes on.
const NoMatchMessage = "No matching sessions found. Search wider before concluding it was never said: " +
	"drop the rarest or most specific words, try synonyms or other names for the thing, or ask the whole " +
	"question in plain words (a result needs only some of the words); add role_filter \"user,assistant,tool\" " +
	"to search tool output too, or subagents: true for delegated work."

// inModelView reports whether the model still sees the hit's message: the row is active, or a
// compaction carried it forward verbatim and that copy is (a hit is the original; the store
// lists its copies).
func inModelView(h store.SearchHit) bool {
	if n := len(h.Copies); n > 0 {
		return h.Copies[n-1].Active
	}
	return !(!h.Active && h.Compacted)
}

// shownID is the row the display view shows for a hit: its newest compaction copy, if any.
func shownID(h store.SearchHit) int64 {
	if n := len(h.Copies); n > 0 {
		return h.Copies[n-1].MessageID
	}
	return h.MessageID
}

func copyKey(h store.SearchHit) string {
	return h.Role + "\x00" + h.Timestamp.UTC().Format(time.RFC3339Nano) + "\x00" + h.Snippet
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func sortOf(s string) store.SearchSort {
	switch s {
	case "newest":
		return store.SortNewest
	case "oldest":
		return store.SortOldest
	}
	return store.SortRelevance
}

// titleMatch finds the session titled q (the newest "q #N" continuation wins), ignoring quotes
// and backticks around q. An id or id prefix is not a title match.
func titleMatch(ctx context.Context, st Store, q string) (store.Session, bool) {
	q = strings.TrimSpace(strings.Trim(strings.TrimSpace(q), "\"'`"))
	if q == "" {
		return store.Session{}, false
	}
	s, err := st.ResolveSession(ctx, q)
	if err != nil || s.Title == "" {
		return store.Session{}, false
	}
	if s.Title == q {
		return s, true
	}
	rest, ok := strings.CutPrefix(s.Title, q+" #")
	if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" {
		return store.Session{}, false
	}
	return s, true
}

// titleResult shows a session matched by title from its start.
func titleResult(ctx context.Context, st Store, s store.Session, window, budget int) (Result, error) {
	conv, err := st.Conversation(ctx, s.ID, store.ViewDisplay)
	if err != nil {
		return Result{}, err
	}
	r := Result{SessionID: s.ID, Title: s.Title, When: when(s.StartedAt), Source: s.Source,
		MatchedRole: "session_title", Detail: "full", Messages: []Message{}, BookendStart: []Message{}, BookendEnd: []Message{}}
	anchor := slices.IndexFunc(conv, func(m store.Message) bool { return m.Role == store.RoleUser && !isSummary(m) })
	if anchor < 0 {
		r.Snippet = "(no messages)"
		return r, nil
	}
	r.MatchMessageID = conv[anchor].ID
	r.Snippet = shorten(oneLine(conv[anchor].Content), previewChars)
	w := expand(conv, anchor, window, defaultRoles, true, budget)
	r.Messages, r.MessagesBefore, r.MessagesAfter, r.BookendStart, r.BookendEnd = w.messages, w.before, w.after, w.start, w.end
	return r, nil
}

func hitResult(ctx context.Context, st Store, s store.Session, h store.SearchHit, window int, roles []string, full bool, budget int) (Result, error) {
	r := Result{SessionID: s.ID, Title: s.Title, When: when(h.Timestamp), Source: s.Source, Snippet: h.Snippet,
		MatchedTerms: h.Terms, MatchMessageID: shownID(h), MatchedRole: h.Role, Archived: !inModelView(h),
		Detail: "compact", BookendStart: []Message{}, BookendEnd: []Message{}}
	compact := []Message{{ID: shownID(h), Role: h.Role, When: when(h.Timestamp), Content: h.Snippet,
		Anchor: true, Archived: r.Archived}}
	if !full {
		r.Messages = compact
		return r, nil
	}
	conv, err := st.Conversation(ctx, s.ID, store.ViewDisplay)
	if err != nil {
		return Result{}, err
	}
	anchor := slices.IndexFunc(conv, func(m store.Message) bool { return m.ID == shownID(h) })
	if anchor < 0 { // changed since the search; the snippet is all there is
		r.Messages = compact
		return r, nil
	}
	w := expand(conv, anchor, window, windowRoles(roles), true, budget)
	r.Detail = "full"
	r.Messages, r.MessagesBefore, r.MessagesAfter, r.BookendStart, r.BookendEnd = w.messages, w.before, w.after, w.start, w.end
	return r, nil
}

// windowRoles is what a window shows: user and assistant messages, plus any role the caller
// asked to search.
func windowRoles(roles []string) []string {
	out := slices.Clone(defaultRoles)
	for _, r := range roles {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// Scroll shows req.Window messages on each side of one message.
func Scroll(ctx context.Context, st Store, req Request) (Scrolled, error) {
	lin, err := newLineage(ctx, st, req.Current)
	if err != nil {
		return Scrolled{}, err
	}
	s, err := resolve(ctx, st, req.SessionID)
	if err != nil {
		return Scrolled{}, err
	}
	if err := inScope(ctx, lin, req, s.ID); err != nil {
		return Scrolled{}, err
	}
	window := clamp(req.Window, 1, MaxWindow)
	conv, err := st.Conversation(ctx, s.ID, store.ViewDisplay)
	if err != nil {
		return Scrolled{}, err
	}
	out := Scrolled{Success: true, Mode: ModeScroll, AroundMessageID: req.AroundMessageID, Window: window}
	idx := indexOf(conv, req.AroundMessageID)
	if idx < 0 {
		// A continuation of the same compression chain may hold it: rebind there.
		chain, err := st.Chain(ctx, s.ID)
		if err != nil {
			return Scrolled{}, err
		}
		for _, c := range chain {
			if c.ID == s.ID {
				continue
			}
			cc, err := st.Conversation(ctx, c.ID, store.ViewDisplay)
			if err != nil {
				return Scrolled{}, err
			}
			if i := indexOf(cc, req.AroundMessageID); i >= 0 {
				out.Warning = fmt.Sprintf("message %d is in session %s, which continues %s; showing it there", req.AroundMessageID, c.ID, s.ID)
				s, conv, idx = c, cc, i
				break
			}
		}
	}
	if idx < 0 {
		return Scrolled{}, fmt.Errorf("around_message_id %d not in session_id %s", req.AroundMessageID, s.ID)
	}
	root, err := lin.root(ctx, s.ID)
	if err != nil {
		return Scrolled{}, err
	}
	if a := conv[idx]; a.Active && lin.inLiveContext(s, root) {
		return Scrolled{}, errors.New("scroll rejected: anchor lives in the current session lineage (already in your active context)")
	}
	roles := req.roles()
	w := expand(conv, idx, window, roles, false, contentBudget)
	out.SessionID, out.SessionMeta = s.ID, meta(s)
	out.Messages, out.MessagesBefore, out.MessagesAfter = w.messages, w.before, w.after
	return out, nil
}

// Read shows a whole session, or its first and last messages when it is large.
func Read(ctx context.Context, st Store, req Request) (Reading, error) {
	s, err := resolve(ctx, st, req.SessionID)
	if err != nil {
		return Reading{}, err
	}
	lin, err := newLineage(ctx, st, req.Current)
	if err != nil {
		return Reading{}, err
	}
	if err := inScope(ctx, lin, req, s.ID); err != nil {
		return Reading{}, err
	}
	conv, err := st.Conversation(ctx, s.ID, store.ViewDisplay)
	if err != nil {
		return Reading{}, err
	}
	roles := req.roles()
	var shown []store.Message
	for _, m := range conv {
		if slices.Contains(roles, m.Role) {
			shown = append(shown, m)
		}
	}
	out := Reading{Success: true, Mode: ModeRead, SessionID: s.ID, SessionMeta: meta(s), MessageCount: len(shown)}
	if len(shown) > largeSession {
		out.Omitted = len(shown) - readHead - readTail
		out.Message = fmt.Sprintf("Showing the first %d and last %d of %d messages; %d in between are left out. "+
			"Scroll with around_message_id (any id between %d and %d) to see them.",
			readHead, readTail, len(shown), out.Omitted, shown[readHead].ID, shown[len(shown)-readTail-1].ID)
		shown = append(shown[:readHead:readHead], shown[len(shown)-readTail:]...)
	}
	per := perMessage(len(shown), contentBudget)
	out.Messages = make([]Message, 0, len(shown))
	for _, m := range shown {
		out.Messages = append(out.Messages, view(m, per))
	}
	if len(shown) == 0 {
		out.Message = "The session has no messages with the requested roles."
	}
	return out, nil
}

// Browse lists recent sessions, newest activity first, without the caller's own lineage.
func Browse(ctx context.Context, st Store, req Request) (Browsing, error) {
	lin, err := newLineage(ctx, st, req.Current)
	if err != nil {
		return Browsing{}, err
	}
	sc, err := scopeOf(ctx, lin, req)
	if err != nil {
		return Browsing{}, err
	}
	limit := clamp(req.Limit, 1, MaxLimit)
	page := limit + 15
	out := Browsing{Success: true, Mode: ModeBrowse, Results: []SessionItem{}}
	for p := 0; p < browsePages && len(out.Results) < limit; p++ {
		ls, err := st.ListSessions(ctx, store.ListOptions{Limit: page, Offset: p * page})
		if err != nil {
			return Browsing{}, err
		}
		for _, l := range ls {
			if len(out.Results) >= limit {
				break
			}
			if slices.Contains(req.hidden(), l.Source) {
				continue
			}
			if req.Current != "" && (l.ID == req.Current || l.ID == lin.currentRoot || l.TipID == req.Current) {
				continue
			}
			if ok, err := lin.admitsID(ctx, sc, l.ID); err != nil {
				return Browsing{}, err
			} else if !ok {
				continue
			}
			item := SessionItem{SessionID: l.ID, Title: l.Title, Source: l.Source, StartedAt: when(l.StartedAt),
				LastActive: when(l.LastActive), MessageCount: l.MessageCount, Preview: l.Preview}
			if l.TipID != "" && l.TipID != l.ID {
				item.TipSessionID = l.TipID
			}
			out.Results = append(out.Results, item)
		}
		if len(ls) < page {
			break
		}
	}
	out.Count = len(out.Results)
	if out.Count == 0 {
		out.Message = "No other sessions yet."
	} else {
		out.Message = fmt.Sprintf("Showing %d most recent sessions. Pass session_id to read one, or query to search them all.", out.Count)
	}
	return out, nil
}

// resolve finds a session by id, title or unique id prefix, with errors the model can act on.
func resolve(ctx context.Context, st Store, ref string) (store.Session, error) {
	s, err := st.ResolveSession(ctx, ref)
	var amb *store.AmbiguousError
	switch {
	case err == nil:
		return s, nil
	case errors.As(err, &amb):
		return s, fmt.Errorf("session_id %s", amb.Error())
	case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid):
		return s, fmt.Errorf("unknown session_id %q", ref)
	}
	return s, err
}

// lineage answers "is this in the caller's live context?" with cached store lookups.
type lineage struct {
	st          Store
	currentRoot string
	roots       map[string]string
	sessions    map[string]store.Session
}

func newLineage(ctx context.Context, st Store, current string) (*lineage, error) {
	l := &lineage{st: st, roots: map[string]string{}, sessions: map[string]store.Session{}}
	if current == "" {
		return l, nil
	}
	root, err := l.root(ctx, current)
	if errors.Is(err, store.ErrNotFound) {
		return l, nil // a session not stored yet has nothing to exclude
	}
	if err != nil {
		return nil, err
	}
	l.currentRoot = root
	return l, nil
}

func (l *lineage) root(ctx context.Context, id string) (string, error) {
	if r, ok := l.roots[id]; ok {
		return r, nil
	}
	r, err := l.st.Root(ctx, id)
	if err != nil {
		return "", err
	}
	l.roots[id] = r
	return r, nil
}

func (l *lineage) session(ctx context.Context, id string) (store.Session, error) {
	if s, ok := l.sessions[id]; ok {
		return s, nil
	}
	s, err := l.st.GetSession(ctx, id)
	if err != nil {
		return s, err
	}
	l.sessions[id] = s
	return s, nil
}

// inLiveContext reports whether s (whose lineage root is root) is part of what the caller's
// model sees: the caller's lineage, unless s has left live context (rotated away by
// compression, or ended by a reset).
func (l *lineage) inLiveContext(s store.Session, root string) bool {
	if l.currentRoot == "" || root != l.currentRoot {
		return false
	}
	switch s.EndReason {
	case store.EndCompression, store.EndNewSession, "reset":
		return false
	}
	return true
}

// window is an expanded anchor.
type window struct {
	messages      []Message
	before, after int
	start, end    []Message
}

// expand takes up to n messages with the given roles on each side of conv[anchor] (the anchor
// is kept whatever its role) and, with bookends, the first and last few messages outside. The
// bodies share budget characters.
func expand(conv []store.Message, anchor, n int, roles []string, bookends bool, budget int) window {
	eligible := func(i int) bool { return slices.Contains(roles, conv[i].Role) }
	var before, after []int
	for i := anchor - 1; i >= 0 && len(before) < n; i-- {
		if eligible(i) {
			before = append(before, i)
		}
	}
	slices.Reverse(before)
	for i := anchor + 1; i < len(conv) && len(after) < n; i++ {
		if eligible(i) {
			after = append(after, i)
		}
	}
	idx := append(append(before, anchor), after...)
	per := perMessage(len(idx), budget)
	w := window{messages: make([]Message, 0, len(idx)), before: len(before), after: len(after),
		start: []Message{}, end: []Message{}}
	for _, i := range idx {
		m := view(conv[i], per)
		m.Anchor = i == anchor
		w.messages = append(w.messages, m)
	}
	if !bookends {
		return w
	}
	first, last := idx[0], idx[len(idx)-1]
	useful := func(i int) bool {
		return eligible(i) && strings.TrimSpace(conv[i].Content) != "" && !isSummary(conv[i])
	}
	for i := 0; i < first && len(w.start) < bookendCount; i++ {
		if useful(i) {
			w.start = append(w.start, view(conv[i], bookendContent))
		}
	}
	for i := len(conv) - 1; i > last && len(w.end) < bookendCount; i-- {
		if useful(i) {
			w.end = append(w.end, view(conv[i], bookendContent))
		}
	}
	slices.Reverse(w.end)
	return w
}

func indexOf(conv []store.Message, id int64) int {
	return slices.IndexFunc(conv, func(m store.Message) bool { return m.ID == id })
}

func perMessage(n, budget int) int { return clamp(budget/max(n, 1), minContent, maxContent) }

// view renders a message with its content bounded to limit characters.
func view(m store.Message, limit int) Message {
	content := m.Content
	if strings.TrimSpace(content) == "" && len(m.ToolCalls) > 0 {
		names := make([]string, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			names[i] = c.Function.Name
		}
		content = "[called tools: " + strings.Join(names, ", ") + "]"
	}
	return Message{ID: m.ID, Role: m.Role, ToolName: m.ToolName, When: when(m.Timestamp),
		Content: shorten(content, limit), Archived: !m.Active && m.Compacted, Summary: isSummary(m)}
}

func isSummary(m store.Message) bool {
	return m.Summary || strings.HasPrefix(m.Content, "[CONTEXT COMPACTION") || strings.HasPrefix(m.Content, "[CONTEXT SUMMARY]:")
}

func meta(s store.Session) SessionMeta {
	return SessionMeta{Title: s.Title, When: when(s.StartedAt), Source: s.Source, Model: s.Model, EndReason: s.EndReason}
}

// when formats a time for the model: local wall time with its zone, minute precision.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("2006-01-02 15:04 MST")
}

// shorten keeps the first limit characters of s and says how many it dropped.
func shorten(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	cut, n := 0, 0
	for i := range s {
		if n == limit {
			cut = i
			break
		}
		n++
	}
	return s[:cut] + fmt.Sprintf(" [... %d more characters]", utf8.RuneCountInString(s[cut:]))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
