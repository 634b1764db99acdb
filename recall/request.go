package recall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Parameter defaults and bounds.
const (
	DefaultLimit  = 3
	MaxLimit      = 10
	DefaultWindow = 5
	MaxWindow     = 20
)

// Modes, in the order a request's arguments select them.
const (
	ModeScroll   = "scroll"
	ModeRead     = "read"
	ModeBrowse   = "browse"
	ModeDiscover = "discover"
)

// Request is one session_search call, already parsed and clamped.
type Request struct {
	// Current is the calling session: its live lineage is left out of discover and browse, and
	// scrolling into its live messages is refused.
	Current         string
	Query           string
	SessionID       string
	AroundMessageID int64 // with SessionID: scroll; 0 means none
	Limit           int   // results, [1, 10]
	Window          int   // messages on each side of an anchor, [1, 20]
	// Roles filters messages; nil means the mode's default (user and assistant).
	Roles []string
	Sort  string // "newest", "oldest", anything else: relevance
	Full  bool   // detail=full: expand every discover result, not only the top one
	// Summary (detail=summary): a model summarizes each discover result's session around its
	// match for the query (see Summarizer).
	Summary bool
	// Subagents lets discover and browse show sub-agent sessions (delegations, source
	// "subagent"), ranked below the others; they are left out otherwise.
	Subagents bool
	// Scope limits the sessions seen (nil: the caller's key scope when its session has a
	// gateway session key, else everything; see Scope).
	Scope *Scope
}

// hidden are the sources discover and browse leave out for this request.
func (r Request) hidden() []string {
	if !r.Subagents {
		return HiddenSources
	}
	return slices.DeleteFunc(slices.Clone(HiddenSources), func(s string) bool { return s == SubagentSource })
}

// demoted are the sources ranked below interactive results for this request.
func (r Request) demoted() []string {
	if !r.Subagents {
		return DemotedSources
	}
	return append(slices.Clone(DemotedSources), SubagentSource)
}

// roles is Roles, or user and assistant when none were asked for.
func (r Request) roles() []string {
	if len(r.Roles) == 0 {
		return defaultRoles
	}
	return r.Roles
}

// Mode is the shape the request's arguments select.
func (r Request) Mode() string {
	switch {
	case r.SessionID != "" && r.AroundMessageID != 0:
		return ModeScroll
	case r.SessionID != "":
		return ModeRead
	case strings.TrimSpace(r.Query) == "":
		return ModeBrowse
	}
	return ModeDiscover
}

// Arguments is the session_search tool's JSON arguments.
type Arguments struct {
	Query           string          `json:"query"`
	SessionID       string          `json:"session_id"`
	AroundMessageID json.RawMessage `json:"around_message_id"`
	Limit           json.RawMessage `json:"limit"`
	Window          json.RawMessage `json:"window"`
	RoleFilter      json.RawMessage `json:"role_filter"`
	Sort            string          `json:"sort"`
	Detail          string          `json:"detail"`
	Subagents       bool            `json:"subagents"`
}

// ParseArgs reads the tool's JSON arguments into a Request for the calling session. Sloppy
// numbers are forgiven (a non-integer limit or window takes its default, out-of-range values are
// clamped); an anchor that is not an integer, an anchor without a session, or an unknown role is
// an error the model should see.
func ParseArgs(current string, raw json.RawMessage) (Request, error) {
	return ParseArgsDetail(current, raw, "")
}

// ParseArgsDetail is ParseArgs with the detail used when the arguments name none (the config's
// recall.detail): "summary", else adaptive.
func ParseArgsDetail(current string, raw json.RawMessage, defaultDetail string) (Request, error) {
	var a Arguments
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &a); err != nil {
			return Request{}, fmt.Errorf("arguments are not a valid JSON object: %v", err)
		}
	}
	if strings.TrimSpace(a.Detail) == "" {
		a.Detail = defaultDetail
	}
	r := Request{
		Current:   current,
		Query:     strings.TrimSpace(a.Query),
		SessionID: strings.TrimSpace(a.SessionID),
		Limit:     clamp(intOr(a.Limit, DefaultLimit), 1, MaxLimit),
		Window:    clamp(intOr(a.Window, DefaultWindow), 1, MaxWindow),
		Sort:      strings.ToLower(strings.TrimSpace(a.Sort)),
		Full:      strings.EqualFold(strings.TrimSpace(a.Detail), "full"),
		Summary:   strings.EqualFold(strings.TrimSpace(a.Detail), "summary"),
		Subagents: a.Subagents,
	}
	if !isNull(a.AroundMessageID) {
		id, ok := asInt(a.AroundMessageID)
		if !ok || id <= 0 {
			return r, fmt.Errorf("around_message_id must be a positive integer message id, got %s", excerpt(a.AroundMessageID))
		}
		if r.SessionID == "" {
			return r, fmt.Errorf("around_message_id needs session_id: pass the session_id of the result it came from")
		}
		r.AroundMessageID = id
	}
	roles, err := parseRoles(a.RoleFilter)
	if err != nil {
		return r, err
	}
	r.Roles = roles
	return r, nil
}

var knownRoles = []string{"user", "assistant", "tool", "system"}

// parseRoles accepts "user,assistant" or ["user","assistant"].
func parseRoles(raw json.RawMessage) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var parts []string
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		parts = strings.Split(s, ",")
	} else if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, fmt.Errorf("role_filter must be a comma-separated string such as \"user,assistant\", got %s", excerpt(raw))
	}
	var roles []string
	for _, p := range parts {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == "" {
			continue
		}
		if !slices.Contains(knownRoles, p) {
			return nil, fmt.Errorf("role_filter: unknown role %q (use user, assistant, tool or system)", p)
		}
		if !slices.Contains(roles, p) {
			roles = append(roles, p)
		}
	}
	return roles, nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// asInt reads an integer given as a JSON number or a numeric string.
func asInt(raw json.RawMessage) (int64, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(strings.TrimSpace(s))
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

func intOr(raw json.RawMessage, def int) int {
	if isNull(raw) {
		return def
	}
	n, ok := asInt(raw)
	if !ok {
		return def
	}
	return int(max(min(n, math.MaxInt32), math.MinInt32))
}

func clamp(n, lo, hi int) int { return max(lo, min(n, hi)) }

func excerpt(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}
