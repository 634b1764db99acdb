package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/recall"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tools"
)

// APITools are the names of spool's own tools a principal may be given (serve.tools). The file
// and terminal tools act on the server's machine and are never offered over the API.
var APITools = []string{"memory", "session_search"}

// MCPPrefix starts the registry name of every MCP tool: mcp__<server>__<tool>.
const MCPPrefix = "mcp__"

// ParseTools builds Config.Tools from principal → tool names separated by commas, spaces or '+'
// (serve.tools). A name is one of APITools, an MCP tool as the model sees it
// (mcp__<server>__<tool>, `spool mcp list` shows them) or every tool of one server
// (mcp__<server>__*, tools it adds later included); servers are the configured MCP servers'
// names. Nothing is allowed that is not listed: MCP calls over the API are never asked about,
// they are allowed by this list or refused.
// With no keys configured, the entry "local" names the one principal.
func ParseTools(m map[string]string, keys Keys, servers []string) (map[string][]string, error) {
	out := map[string][]string{}
	for name, list := range m {
		principal := name
		if !keys.Enabled() {
			if name != "local" {
				return nil, fmt.Errorf("serve.tools.%s: without serve.keys the only principal is \"local\"", name)
			}
			principal = Local
		} else if !slices.Contains(keys.names, name) {
			return nil, fmt.Errorf("serve.tools.%s: no key in serve.keys names this principal", name)
		}
		for _, t := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '+' }) {
			if err := checkToolName(t, servers); err != nil {
				return nil, fmt.Errorf("serve.tools.%s: %w", name, err)
			}
			if !slices.Contains(out[principal], t) {
				out[principal] = append(out[principal], t)
			}
		}
	}
	return out, nil
}

func checkToolName(t string, servers []string) error {
	if slices.Contains(APITools, t) {
		return nil
	}
	if !strings.HasPrefix(t, MCPPrefix) {
		return fmt.Errorf("%q is not one of spool's tools for API sessions (%s) nor an MCP tool (mcp__<server>__<tool>, mcp__<server>__*)", t, strings.Join(APITools, ", "))
	}
	for _, s := range servers {
		rest, ok := strings.CutPrefix(t, MCPPrefix+s+"__")
		if !ok || rest == "" {
			continue
		}
		if strings.Contains(rest, "*") && rest != "*" {
			return fmt.Errorf("%q: only a whole server may be allowed with * (mcp__%s__*)", t, s)
		}
		if rest == "*" {
			for _, o := range servers {
				if o != s && strings.HasPrefix(o, s+"__") {
					// mcp__s__* would also cover every tool of server o.
					return fmt.Errorf("%q would also allow the tools of MCP server %s; list server %s's tools one by one", t, o, s)
				}
			}
		}
		return nil
	}
	return fmt.Errorf("%q names no configured MCP server (mcp.servers: %s)", t, strings.Join(servers, ", "))
}

// ToolAllowed reports whether allow (a principal's Config.Tools) admits the tool name: listed
// as is, or under a server's mcp__<server>__* entry.
func ToolAllowed(allow []string, name string) bool {
	for _, a := range allow {
		if a == name {
			return true
		}
		if p, ok := strings.CutSuffix(a, "*"); ok && strings.HasPrefix(p, MCPPrefix) && strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// PrincipalHome is where a principal's own files (its memories) live: home itself for Local
// (the machine's user, who shares them with the CLI), else home/principals/<name>.
func PrincipalHome(home, principal string) string {
	if principal == Local {
		return home
	}
	return filepath.Join(home, "principals", principal)
}

// SessionOwner is what OwnTools reads of the store: the calling session's principal.
type SessionOwner interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
}

// OwnTools are spool's own tools (APITools of reg) and the MCP tools of reg for API sessions,
// confined to the calling session's principal: session_search reads only that principal's
// sessions, memory writes in PrincipalHome, and an MCP tool runs only when allow (the
// principal's Config.Tools, ToolAllowed) admits it, approved by that list without asking
// anyone; any other call is refused. env is the template of every call (its Store is the
// search store).
func OwnTools(reg *tools.Registry, env tools.Env, owners SessionOwner, allow map[string][]string) agent.Tools {
	var defs []provider.Tool
	for _, d := range reg.Definitions() {
		if slices.Contains(APITools, d.Name) || strings.HasPrefix(d.Name, MCPPrefix) {
			defs = append(defs, d)
		}
	}
	return ownTools{reg: reg, env: env, owners: owners, defs: defs, allow: allow}
}

type ownTools struct {
	reg    *tools.Registry
	env    tools.Env
	owners SessionOwner
	defs   []provider.Tool
	allow  map[string][]string
}

func (o ownTools) Definitions() []provider.Tool { return o.defs }

func (o ownTools) Call(ctx context.Context, sessionID string, c store.ToolCall) (string, bool) {
	name := c.Function.Name
	mcpTool := strings.HasPrefix(name, MCPPrefix)
	if !slices.Contains(APITools, name) && !mcpTool {
		return fmt.Sprintf("Error: the tool %q is not available in this session.", name), true
	}
	s, err := o.owners.GetSession(ctx, sessionID)
	if err != nil {
		return "Error: the calling session could not be read; try again.", true
	}
	allowed := ToolAllowed(o.allow[s.UserID], name)
	if mcpTool && !allowed {
		// The agent offers only what the key allows; a call of anything else is refused here
		// too, before any server sees it.
		return fmt.Sprintf("Error: the tool %q is not available in this session (serve.tools does not allow it for this key).", name), true
	}
	env := o.env
	env.SessionID = sessionID
	env.Home = PrincipalHome(o.env.Home, s.UserID)
	if env.Store != nil {
		env.Store = scoped{Store: env.Store, principal: s.UserID}
	}
	// No one is there to ask: an MCP call is approved by the key's list and nothing else.
	env.Approver = func(_ context.Context, req tools.ApprovalRequest) error {
		if req.Tool == name && allowed {
			return nil
		}
		return fmt.Errorf("%w: serve.tools does not allow %s for this key", tools.ErrDenied, req.Tool)
	}
	res := o.reg.Call(ctx, env, name, c.Function.Arguments)
	return res.Content, res.IsError
}

// scoped is a recall.Store that sees only one principal's sessions (all of them for Local,
// the keyless server's one principal).
type scoped struct {
	recall.Store
	principal string
}

func (s scoped) own(ctx context.Context, id string) error {
	if s.principal == Local {
		return nil
	}
	sess, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return err
	}
	if sess.UserID != s.principal {
		return fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	return nil
}

func (s scoped) GetSession(ctx context.Context, id string) (store.Session, error) {
	sess, err := s.Store.GetSession(ctx, id)
	if err == nil && s.principal != Local && sess.UserID != s.principal {
		return store.Session{}, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	return sess, err
}

func (s scoped) ResolveSession(ctx context.Context, ref string) (store.Session, error) {
	if s.principal == Local {
		return s.Store.ResolveSession(ctx, ref)
	}
	return s.Store.ResolveSessionOf(ctx, s.principal, ref)
}

func (s scoped) ResolveSessionOf(ctx context.Context, userID, ref string) (store.Session, error) {
	if s.principal != Local && userID != s.principal {
		return store.Session{}, fmt.Errorf("session %s: %w", ref, store.ErrNotFound)
	}
	return s.Store.ResolveSessionOf(ctx, userID, ref)
}

func (s scoped) Root(ctx context.Context, id string) (string, error) {
	if err := s.own(ctx, id); err != nil {
		return "", err
	}
	return s.Store.Root(ctx, id)
}

func (s scoped) Chain(ctx context.Context, id string) ([]store.Session, error) {
	if err := s.own(ctx, id); err != nil {
		return nil, err
	}
	ch, err := s.Store.Chain(ctx, id)
	if err != nil || s.principal == Local {
		return ch, err
	}
	out := ch[:0:0]
	for _, c := range ch {
		if c.UserID == s.principal {
			out = append(out, c)
		}
	}
	return out, nil
}

func (s scoped) Conversation(ctx context.Context, id string, v store.View) ([]store.Message, error) {
	if err := s.own(ctx, id); err != nil {
		return nil, err
	}
	return s.Store.Conversation(ctx, id, v)
}

func (s scoped) Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	if s.principal != Local {
		q.UserID = s.principal
	}
	return s.Store.Search(ctx, q)
}

func (s scoped) ListSessions(ctx context.Context, o store.ListOptions) ([]store.SessionListing, error) {
	if s.principal != Local {
		o.UserID = s.principal
	}
	return s.Store.ListSessions(ctx, o)
}
