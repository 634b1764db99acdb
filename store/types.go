package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Roles of a message in a conversation.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Relation says why a child session exists.
type Relation string

// Lineage relations between a session and its parent.
const (
	RelationNone        Relation = ""
	RelationBranch      Relation = "branch"
	RelationCompression Relation = "compression"
	RelationReset       Relation = "reset"
	RelationDelegate    Relation = "delegate"
)

// Valid reports whether r is one of the known relations (or none).
func (r Relation) Valid() bool {
	switch r {
	case RelationNone, RelationBranch, RelationCompression, RelationReset, RelationDelegate:
		return true
	}
	return false
}

// End reasons with a meaning to the store itself.
const (
	EndCompression = "compression" // the session was rotated into a continuation child
	EndNewSession  = "new_session" // deliberate: the user started over (/new)
	EndReset       = "session_reset"
	EndUserExit    = "user_exit"    // automatic: the interactive process exited
	EndProcessExit = "process_exit" // automatic: the process that ran the session exited
	EndIdle        = "idle_timeout" // automatic: nobody wrote for a while
)

// automaticEnds are the end stamps a process or a timer writes on its own: they record that a
// process stopped, not that the conversation is over, so a continuation may clear them.
var automaticEnds = map[string]bool{
	EndUserExit: true, EndProcessExit: true, EndIdle: true,
	"cli_close": true, "tui_close": true, "tui_shutdown": true, "agent_close": true,
	"ws_disconnect": true, "ws_orphan_reap": true, "lru_evict": true,
	"superseded_by_resume": true, "startup_orphan_reap": true,
}

// AutomaticEnd reports whether reason is an automatic end stamp (a process exit, an idle
// timeout). Every other reason, unknown ones included, is deliberate: a reset, /new, a
// compression rotation.
func AutomaticEnd(reason string) bool { return automaticEnds[reason] }

// ToolCall is one function call requested by an assistant message, in the OpenAI shape that every
// provider adapter converts to and from.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
}

// ToolFunction names the called tool and carries its JSON arguments exactly as the model sent them.
type ToolFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Message is one row of a transcript in canonical form.
type Message struct {
	ID        int64 // row id: insertion order; zero before the message is stored
	SessionID string
	Role      string
	Content   string
	// APIContent is the exact text sent on the wire when it differs from Content (per-turn
	// injections). Empty means Content was sent verbatim.
	APIContent string
	ToolCalls  []ToolCall
	ToolCallID string
	ToolName   string
	// Reasoning is the model's visible reasoning text; ReasoningDetails keeps provider-specific
	// reasoning blocks (signatures, encrypted items) that must be replayed byte for byte.
	Reasoning        string
	ReasoningDetails json.RawMessage
	FinishReason     string
	TokenCount       int
	Timestamp        time.Time
	// Summary marks a compaction summary carrier.
	Summary bool
	// Active rows are what the model sees. Archived rows (Active false, Compacted true) were
	// compacted away and stay searchable; rows with both false were superseded and are hidden.
	Active    bool
	Compacted bool
}

// Usage counts what model calls consumed; it accumulates on a session.
type Usage struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	APICalls         int64   `json:"api_calls"`
	CostUSD          float64 `json:"cost_usd"`
}

// Add returns the element-wise sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens:  u.ReasoningTokens + v.ReasoningTokens,
		APICalls:         u.APICalls + v.APICalls,
		CostUSD:          u.CostUSD + v.CostUSD,
	}
}

// Session is one conversation's row.
type Session struct {
	ID               string
	Source           string
	UserID           string
	SessionKey       string
	Title            string
	Model            string
	ModelConfig      json.RawMessage // a JSON object, or nil
	SystemPromptHash string
	ParentID         string
	Relation         Relation
	StartedAt        time.Time
	EndedAt          time.Time // zero while the session is open
	EndReason        string
	MessageCount     int // active rows: the model's view
	ToolCallCount    int // tool calls on active rows
	// Shown is the conversation's size as its person had it, the count every listing, banner
	// and browser shows: see Shown.
	Shown     Shown
	Usage     Usage
	Cwd       string
	GitBranch string
}

// Shown counts a session's conversation as a person had it, whatever compaction did to the
// model's view: every live and archived row once (a row a compaction re-inserted verbatim counts
// as its original), compaction summaries not counted. Before any compaction it equals the active
// counts (MessageCount, ToolCallCount).
type Shown struct {
	Messages  int
	ToolCalls int
}

// Ended reports whether the session has been ended.
func (s Session) Ended() bool { return !s.EndedAt.IsZero() }

// NewSession describes a session to create. Zero fields take defaults: a fresh ID, source "cli",
// StartedAt now.
type NewSession struct {
	ID          string
	Source      string
	UserID      string
	SessionKey  string
	Title       string
	Model       string
	ModelConfig json.RawMessage
	ParentID    string
	Relation    Relation
	StartedAt   time.Time
	Cwd         string
	GitBranch   string
	// SystemPrompt and Messages, when set, are the new session's frozen system prompt and first
	// messages, stored in the same transaction as the session: a failed first write never leaves
	// an empty or half-copied session behind. With either set and an id that already exists,
	// CreateSession fails with ErrExists and stores nothing.
	SystemPrompt string
	Messages     []Message
}

// SessionPatch changes session metadata; nil fields are left alone.
type SessionPatch struct {
	Model       *string
	ModelConfig json.RawMessage // replaces the whole object when non-nil
	Cwd         *string
	GitBranch   *string
	Source      *string
}

// View selects which rows a conversation load returns.
type View int

const (
	// ViewActive is what the model sees: active rows only.
	ViewActive View = iota
	// ViewDisplay adds rows archived by compaction, for showing a whole history to a person.
	ViewDisplay
	// ViewAll returns every row, superseded ones included.
	ViewAll
)

// ListOptions filters a session listing.
type ListOptions struct {
	Limit      int // 0 means no limit
	Offset     int
	Source     string
	UserID     string
	SessionKey string
	// IncludeChildren also lists compression continuations and delegate runs, which are
	// otherwise folded into their chain's root.
	IncludeChildren bool
	// Model and Cwd, when set, keep only sessions with exactly that model or working directory.
	Model string
	Cwd   string
	// Query, when set, keeps sessions whose title or first user message contains it (case-
	// insensitive for ASCII letters; the text is matched literally, never as a pattern).
	Query string
	// Trees lists whole branch trees, as a browser groups them: Limit and Offset count tree
	// roots (listed sessions that are no listed session's branch), newest activity first, and
	// each root is followed by its branches at any depth, depth first, siblings newest
	// activity first, with TreeParent naming the row each nests under. Source, Model, Cwd and
	// Query pick the sessions that match; a tree is listed when any of its sessions matches,
	// with its root and the branches on the way to a match marked Unmatched. UserID and
	// SessionKey bound every row, roots and branches alike. Trees never lists compression
	// continuations or delegate runs (IncludeChildren with Trees is an error).
	Trees bool
}

// ErrTreesWithChildren is ListSessions' answer to Trees with IncludeChildren.
var ErrTreesWithChildren = Invalid("list", "a tree listing folds continuations and delegate runs: Trees and IncludeChildren together")

// SessionListing is a session as a picker shows it.
type SessionListing struct {
	Session
	Preview    string    // first user message, 60 characters and "..."
	LastActive time.Time // newest message, else the start
	// TipID is the live compression tip when the listed row heads a compression chain.
	TipID string
	// TreeParent is, in a Trees listing, the listed session this branch nests under: the
	// compression chain root of the session it branched from. Empty for a tree's root.
	TreeParent string
	// Unmatched marks, in a Trees listing with filters, a row listed only because a session
	// under it matches: a tree's root, or a branch on the way to a match.
	Unmatched bool
}

// SearchSort orders search hits.
type SearchSort int

// Search orders.
const (
	SortRelevance SearchSort = iota
	SortNewest
	SortOldest
)

// SearchQuery is a full-text query with filters. The query text is user input: backends sanitize
// it so no input causes an engine syntax error.
type SearchQuery struct {
	Text           string
	Sources        []string // only these sources, when non-empty
	ExcludeSources []string
	Roles          []string // only these roles, when non-empty
	SessionIDs     []string // only these sessions, when non-empty
	UserID         string   // only sessions of this user, when set
	Limit          int      // 0 means 20
	Offset         int
	Sort           SearchSort
	// NoContext skips loading the neighbouring messages of each hit.
	NoContext bool
}

// SearchHit is one matching message.
type SearchHit struct {
	MessageID int64
	SessionID string
	Role      string
	Snippet   string // matched terms between >>> and <<<
	// Terms are the query's words, phrases and identifiers the message holds (a word through
	// any of its forms), as the query wrote them; empty for substring (CJK) matches.
	Terms          []string
	Source         string
	Model          string
	SessionStarted time.Time
	Timestamp      time.Time
	Active         bool
	Compacted      bool
	// ToolName is the tool of a tool row (its result), empty for other roles.
	ToolName string
	// Summary marks a hit in a compaction summary (a restatement written by the compactor, not
	// something a person or a tool said).
	Summary bool
	// Copies are the verbatim copies of this message that later compactions re-inserted (a
	// protected head carried into the next generation), oldest first. A search returns the
	// original once, as this hit, rather than one hit per generation; the display view
	// (ViewDisplay) shows the newest copy in its place.
	Copies []SearchCopy
	Before *ContextLine // the previous message in the session, if any
	After  *ContextLine // the next message in the session, if any
}

// SearchCopy is one compaction copy of a search hit's message, in the hit's session.
type SearchCopy struct {
	MessageID int64
	Active    bool // the copy is in the model's view
}

// ContextLine is a neighbour of a search hit, truncated to 200 characters.
type ContextLine struct {
	MessageID int64
	Role      string
	Content   string
}

// PageQuery selects a window of a conversation, in id order.
type PageQuery struct {
	View View
	// AfterID, when set, starts the window after this message id.
	AfterID int64
	// BeforeID, when set, ends the window before this message id; with AfterID unset the
	// window is then the last Limit rows before it (still returned in id order).
	BeforeID int64
	Limit    int // 0 means 200
}

// HeldLease is a turn lease someone holds right now: unexpired, with a holder.
type HeldLease struct {
	ConversationID string // the lineage root
	Holder         string
	Generation     int64
	AcquiredAt     time.Time // when this holder took it (renewals keep it)
	ExpiresAt      time.Time
}

// UsageQuery selects recorded model calls for a usage report.
type UsageQuery struct {
	UserID string    // only sessions of this user, when set
	Since  time.Time // only calls at or after this instant, when set
}

// UsageRow is the usage of one model on one day (UTC).
type UsageRow struct {
	Day   time.Time // midnight UTC
	Model string
	Usage Usage
}

// CompactRequest replaces a session's active history in place, in one transaction.
type CompactRequest struct {
	SessionID string
	// Messages is the new active set (head, summary, tail), inserted as fresh rows.
	Messages []Message
	// Watermark is the highest active message id the compactor read before its slow summary
	// call. Active rows above it were appended meanwhile and are carried over after Messages,
	// in order. Zero archives every active row.
	Watermark int64
	// TailCount is how many of the last active rows at or below the watermark Messages carries
	// forward verbatim; their originals are hidden rather than archived, so search does not show
	// them twice.
	TailCount int
	// ModelConfigPatch is merged into the session's model_config; a JSON null value removes a key.
	ModelConfigPatch map[string]json.RawMessage
	// LockHolder, when set, must hold the session's unexpired compression lock.
	LockHolder string
}

// RotateRequest ends a session with reason "compression" and continues it in a new child session
// holding Messages plus every active parent row above Watermark, in one transaction.
type RotateRequest struct {
	ParentID   string
	Child      NewSession
	Messages   []Message
	Watermark  int64
	LockHolder string
}

// Stats summarises a store.
type Stats struct {
	Sessions         int `json:"sessions"`
	OpenSessions     int `json:"open_sessions"`
	Messages         int `json:"messages"`
	ActiveMessages   int `json:"active_messages"`
	ArchivedMessages int `json:"archived_messages"`
	// SupersededMessages are hidden rows (undone, or originals of a compaction's verbatim
	// tail): Messages = ActiveMessages + ArchivedMessages + SupersededMessages.
	SupersededMessages int            `json:"superseded_messages"`
	SystemPrompts      int            `json:"system_prompts"`
	BySource           map[string]int `json:"sessions_by_source"`
	Bytes              int64          `json:"bytes"`
	Usage              Usage          `json:"usage"`
}

// RequestRecord is the accounting of one model call: what it cost and, when the provider's
// prompt cache missed bytes it had before, where and why the prefix changed.
type RequestRecord struct {
	At    time.Time
	Model string
	// Task is "turn" for the agent's own calls (the default) or the auxiliary task
	// ("compression", "title", ...).
	Task  string
	Usage Usage // this call's tokens and cost; APICalls is counted as one when zero
	// Fallback names the fallback model (provider.fallbacks[].name) that answered when the main
	// model had failed; "" for the main model.
	Fallback string
	Break    *CacheBreak
	// Latency is the wall time of the call, from sending the request to the whole answer
	// (stream included); zero when it was not measured.
	Latency time.Duration
	// Lease, when set, fences the record like a transcript write: it is stored only while Lease
	// is the conversation's current lease, else RecordRequest fails with ErrLeaseLost and
	// stores nothing. A turn that lost its lease (a paused process resumed after another holder
	// took over) so leaves no request row and adds no usage, though the call it made was real.
	Lease *Lease
}

// Normalized is r with the defaults every backend stores: At is now when zero, Task is "turn"
// when empty, and a call counts as one API call when Usage counts none.
func (r RequestRecord) Normalized() RequestRecord {
	if r.At.IsZero() {
		r.At = time.Now()
	}
	if r.Task == "" {
		r.Task = "turn"
	}
	if r.Usage.APICalls == 0 {
		r.Usage.APICalls = 1
	}
	return r
}

// BreakJSON is r.Break as stored: its JSON, or ok false when r has no cache break.
func (r RequestRecord) BreakJSON() (doc string, ok bool, err error) {
	if r.Break == nil {
		return "", false, nil
	}
	b, err := json.Marshal(r.Break)
	if err != nil {
		return "", false, fmt.Errorf("encode cache break: %w", err)
	}
	return string(b), true, nil
}

// CacheBreak explains a prompt-cache miss: the first layer of the request whose bytes changed.
type CacheBreak struct {
	Layer      string `json:"layer"`           // "model", "tools", "system", "system.<tier>", "messages"
	Index      int    `json:"index,omitempty"` // the tier or message index within Layer
	Reason     string `json:"reason"`          // "compaction", "tools", "ttl", "resume", "edit", "model", "unknown"
	LostTokens int64  `json:"lost_tokens"`     // cached tokens the previous request had and this one did not
	// Detail names what changed in words, when the agent knows more than the layer: the
	// models of a fallback switch, the MCP servers whose tool lists changed.
	Detail string `json:"detail,omitempty"`
}

// Route is a gateway routing entry: the session a session key (one chat, thread or user
// lane) continues. A gateway resolves the entry to its live compression tip.
type Route struct {
	Key       string
	SessionID string
	// Suspended (set by /stop) makes the next message start a fresh session linked to this one.
	Suspended bool
	// ResumePending keeps the session across a restart that timed out a turn.
	ResumePending bool
	// Origin is the platform metadata of the lane (platform, chat_type, display_name, ...): a
	// JSON object, or nil.
	Origin    json.RawMessage
	UpdatedAt time.Time
}

// MaxRouteKey bounds a session key; real keys are well under 200 bytes.
const MaxRouteKey = 512

// Validate checks a route before any backend stores it: a key (not starting with /, at most
// MaxRouteKey bytes), a session, and an origin that is a JSON object when set.
func (r Route) Validate() error {
	switch {
	case r.Key == "":
		return Invalid("session_key", "empty")
	case len(r.Key) > MaxRouteKey:
		return Invalid("session_key", "%d bytes, the limit is %d", len(r.Key), MaxRouteKey)
	case r.Key[0] == '/':
		return Invalid("session_key", "%q starts with /", r.Key)
	case r.SessionID == "":
		return Invalid("session_id", "empty")
	}
	if len(r.Origin) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r.Origin, &obj); err != nil {
			return Invalid("origin", "must be a JSON object: %v", err)
		}
	}
	return nil
}

// ModelCooldown is a model that failed and is passed over by new turns until Until, in every
// process on the store (provider.fallback_cooldown). Model is the agent's key for the model.
type ModelCooldown struct {
	Model string
	Until time.Time
}

// Cooldowns persist fallback cooldowns across processes; both backends implement it.
type Cooldowns interface {
	// ModelCooldowns lists the stored cooldowns, expired ones included, ordered by model.
	ModelCooldowns(ctx context.Context) ([]ModelCooldown, error)
	// SetModelCooldown stores model's cooldown; a zero until removes it (the model answered).
	SetModelCooldown(ctx context.Context, model string, until time.Time) error
}
