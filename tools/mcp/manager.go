package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spoolhq/spool/tools"
)

// Prefix starts the name of every MCP tool.
const Prefix = "mcp__"

// State of a server.
const (
	Connected = "connected"
	Failed    = "failed"
)

// Status is what `spool mcp list` shows of one server.
type Status struct {
	Name      string     `json:"name"`
	Transport string     `json:"transport"` // "stdio" or "http"
	State     string     `json:"state"`
	Error     string     `json:"error,omitempty"`
	Restarts  int        `json:"restarts"`
	Tools     []ToolInfo `json:"tools"`
}

// ToolInfo is one tool of a server.
type ToolInfo struct {
	Name        string `json:"name"` // the registry name, mcp__<server>__<tool>
	Remote      string `json:"remote"`
	Description string `json:"description,omitempty"`
	// Skipped says why the tool is not offered to the model (a schema the registry rejects).
	Skipped string `json:"skipped,omitempty"`
}

// Manager owns the connections to the configured servers.
type Manager struct {
	opts    Options
	servers []*server
}

type server struct {
	cfg    Server
	opts   Options
	client *sdk.Client

	mu       sync.Mutex
	session  *sdk.ClientSession
	cmd      *exec.Cmd // the running process of a stdio server
	stderr   *tailBuffer
	gen      int // bumped at every (re)connect
	restarts int
	failed   error // set when the server is given up on
	closed   bool
	listed   []*sdk.Tool // the tools listed at the first connect
}

// Start connects every server and lists its tools. It never fails: a server that cannot be
// reached is failed with its reason (see Status). Close the Manager when done.
func Start(ctx context.Context, servers []Server, opts Options) *Manager {
	opts = opts.withDefaults()
	m := &Manager{opts: opts}
	for _, cfg := range servers {
		s := &server{cfg: cfg, opts: opts,
			client: sdk.NewClient(&sdk.Implementation{Name: "spool", Version: "1"}, nil)}
		m.servers = append(m.servers, s)
	}
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Go(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if err := s.connectLocked(ctx); err != nil {
				s.failed = err
				return
			}
			lctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
			defer cancel()
			var list []*sdk.Tool
			for t, err := range s.session.Tools(lctx, nil) {
				if err != nil {
					s.failed = fmt.Errorf("list tools: %w", err)
					s.dropLocked()
					return
				}
				list = append(list, t)
			}
			s.listed = list
		})
	}
	wg.Wait()
	return m
}

// Close ends every server. It is safe to call more than once.
func (m *Manager) Close() error {
	if m == nil {
		return nil
	}
	var errs []error
	for _, s := range m.servers {
		s.mu.Lock()
		s.closed = true
		if s.session != nil {
			if err := s.closeLocked(); err != nil {
				errs = append(errs, fmt.Errorf("mcp server %s: %w", s.cfg.Name, err))
			}
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Tools returns the tools of every connected server, ready for tools.New. A tool whose schema
// the registry would reject is left out (Status names it).
func (m *Manager) Tools() []tools.Tool {
	if m == nil {
		return nil
	}
	var out []tools.Tool
	seen := map[string]bool{}
	for _, s := range m.servers {
		for _, t := range s.tools() {
			if seen[t.Name] {
				continue
			}
			if _, err := tools.New(t); err != nil {
				continue
			}
			seen[t.Name] = true
			out = append(out, t)
		}
	}
	return out
}

// Status reports every server, in configuration order.
func (m *Manager) Status() []Status {
	if m == nil {
		return nil
	}
	out := []Status{}
	seen := map[string]bool{}
	for _, s := range m.servers {
		s.mu.Lock()
		st := Status{Name: s.cfg.Name, Transport: "stdio", State: Connected, Restarts: s.restarts, Tools: []ToolInfo{}}
		if s.cfg.URL != "" {
			st.Transport = "http"
		}
		if s.failed != nil {
			st.State, st.Error = Failed, s.failed.Error()
		}
		listed := s.listed
		s.mu.Unlock()
		for _, rt := range listed {
			t := s.tool(rt)
			info := ToolInfo{Name: t.Name, Remote: rt.Name, Description: rt.Description}
			if _, err := tools.New(t); err != nil {
				info.Skipped = err.Error()
			} else if seen[t.Name] {
				info.Skipped = "another tool has the same name"
			}
			seen[t.Name] = true
			st.Tools = append(st.Tools, info)
		}
		slices.SortFunc(st.Tools, func(a, b ToolInfo) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, st)
	}
	return out
}

func (s *server) tools() []tools.Tool {
	s.mu.Lock()
	listed := s.listed
	s.mu.Unlock()
	out := make([]tools.Tool, 0, len(listed))
	for _, rt := range listed {
		out = append(out, s.tool(rt))
	}
	return out
}

// tool adapts one listed tool.
func (s *server) tool(rt *sdk.Tool) tools.Tool {
	params, err := json.Marshal(rt.InputSchema)
	if err != nil || rt.InputSchema == nil || string(params) == "null" {
		params = []byte(`{"type":"object"}`)
	}
	desc := "MCP server " + s.cfg.Name + ": " + strings.TrimSpace(rt.Description)
	if strings.TrimSpace(rt.Description) == "" {
		desc = "MCP server " + s.cfg.Name + " tool " + rt.Name + "."
	}
	name, remote := ToolName(s.cfg.Name, rt.Name), rt.Name
	return tools.Tool{
		Name:        name,
		Description: desc,
		Parameters:  params,
		Run: func(ctx context.Context, env tools.Env, args json.RawMessage) (string, error) {
			approve := env.Approver
			if approve == nil {
				approve = tools.Deny("no approver is configured for MCP tools (non-interactive runs need --yes)")
			}
			if err := approve(ctx, tools.ApprovalRequest{Tool: name, Command: name + " " + string(args), WorkDir: env.WorkDir}); err != nil {
				return "", fmt.Errorf("MCP tool not called: %w", err)
			}
			return s.call(ctx, remote, args)
		},
	}
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// ToolName is the registry name of tool on server: mcp__<server>__<tool>, sanitised and at most
// 64 bytes. A name that had to change ends in 8 hex digits of a hash of the original, so two
// different tools never share a name and the name is the same in every process.
func ToolName(server, tool string) string {
	raw := Prefix + server + "__" + tool
	clean := unsafeChars.ReplaceAllString(raw, "_")
	if clean == raw && len(clean) <= 64 {
		return clean
	}
	sum := sha256.Sum256([]byte(raw))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(clean) > 64-len(suffix) {
		clean = clean[:64-len(suffix)]
	}
	return clean + suffix
}

// call calls the remote tool and returns its text; every failure is an error.
func (s *server) call(ctx context.Context, remote string, args json.RawMessage) (string, error) {
	session, gen, err := s.get(ctx)
	if err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	res, err := session.CallTool(cctx, &sdk.CallToolParams{Name: remote, Arguments: args})
	if err != nil {
		var wire *jsonrpc.Error
		switch {
		case errors.As(err, &wire):
			// The server answered: it is alive, the request was wrong.
			return "", fmt.Errorf("MCP server %s: %s", s.cfg.Name, wire.Message)
		case ctx.Err() != nil:
			return "", ctx.Err()
		case cctx.Err() != nil:
			s.broken(gen, fmt.Errorf("did not answer within %s", s.opts.CallTimeout))
		default:
			s.broken(gen, err)
		}
		return "", fmt.Errorf("MCP server %s: %s", s.cfg.Name, s.describe(err, cctx))
	}
	text := resultText(res)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error"
		}
		return "", errors.New(text)
	}
	return text, nil
}

// describe says what happened to a call that got no answer, and what happens next.
func (s *server) describe(err error, cctx context.Context) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	what := err.Error()
	if cctx.Err() == context.DeadlineExceeded {
		what = fmt.Sprintf("no answer within %s; the server was stopped", s.opts.CallTimeout)
	} else if tail := s.stderrTail(); tail != "" {
		what += " (stderr: " + tail + ")"
	}
	if s.failed != nil {
		return what + "; " + s.failed.Error()
	}
	return what + fmt.Sprintf("; it will be restarted on the next call (%d of %d restarts used)", s.restarts, s.opts.MaxRestarts)
}

func (s *server) stderrTail() string {
	if s.stderr == nil {
		return ""
	}
	return s.stderr.lastLine()
}

// get returns a live session, reconnecting a dead server while restarts remain.
func (s *server) get(ctx context.Context) (*sdk.ClientSession, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, fmt.Errorf("MCP server %s is closed", s.cfg.Name)
	}
	if s.failed != nil {
		return nil, 0, fmt.Errorf("MCP server %s failed: %v", s.cfg.Name, s.failed)
	}
	if s.session != nil {
		return s.session, s.gen, nil
	}
	s.restarts++
	if err := s.connectLocked(ctx); err != nil {
		if s.restarts >= s.opts.MaxRestarts {
			s.failed = fmt.Errorf("gave up after %d restarts: %w", s.restarts, err)
		}
		return nil, 0, fmt.Errorf("MCP server %s: restart: %w", s.cfg.Name, err)
	}
	return s.session, s.gen, nil
}

// broken drops session generation gen after a failed call; when no restart remains the server
// is failed.
func (s *server) broken(gen int, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.gen || s.session == nil {
		return // another call already dropped it
	}
	s.dropLocked()
	if s.restarts >= s.opts.MaxRestarts {
		s.failed = fmt.Errorf("gave up after %d restarts: %w", s.restarts, cause)
	}
}

// connectLocked starts the server (or opens the HTTP session) and initialises it.
func (s *server) connectLocked(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	defer cancel()
	var transport sdk.Transport
	switch {
	case s.cfg.URL != "":
		transport = &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, MaxRetries: -1}
	case len(s.cfg.Command) > 0:
		// Not CommandContext: the process outlives this call; closeLocked ends it.
		cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
		cmd.Env = slices.Clone(s.opts.Environ)
		for _, k := range sortedKeys(s.cfg.Env) {
			cmd.Env = append(cmd.Env, k+"="+s.cfg.Env[k])
		}
		s.stderr = &tailBuffer{}
		cmd.Stderr = s.stderr
		cmd.WaitDelay = 2 * time.Second
		ownGroup(cmd)
		s.cmd = cmd
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	default:
		return errors.New("neither command nor url is set")
	}
	session, err := s.client.Connect(cctx, transport, nil)
	if err != nil {
		if s.cmd != nil && s.cmd.Process != nil {
			killGroup(s.cmd)
			_ = s.cmd.Wait()
		}
		s.cmd = nil
		if tail := s.stderrTail(); tail != "" {
			return fmt.Errorf("connect: %w (stderr: %s)", err, tail)
		}
		return fmt.Errorf("connect: %w", err)
	}
	s.session = session
	s.gen++
	return nil
}

// dropLocked kills the process (a hung server would not stop on its own) and closes the session.
func (s *server) dropLocked() {
	killGroup(s.cmd)
	_ = s.closeLocked()
}

func (s *server) closeLocked() error {
	var err error
	if s.session != nil {
		err = s.session.Close()
		s.session = nil
	}
	killGroup(s.cmd) // whatever the server left running
	s.cmd = nil
	return err
}

// resultText is the text of a tool result: text parts as they are, other parts described.
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes, not shown]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", c.URI))
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s, not shown]", c.Resource.URI))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// tailBuffer keeps the last bytes a server wrote to stderr, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 2048

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > tailMax {
		b.buf = b.buf[len(b.buf)-tailMax:]
	}
	return len(p), nil
}

// lastLine is the last non-empty line, cut to 200 bytes.
func (b *tailBuffer) lastLine() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(b.buf)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 200 {
		last = last[:200] + "..."
	}
	return last
}

// Refresh lists the tools of every connected server again and returns the names of the servers
// whose list changed, in configuration order; Tools then returns the new lists. A server that
// does not answer in time keeps its old list. Call it between turns only: the tools offered
// within a turn must not change.
func (m *Manager) Refresh(ctx context.Context) []string {
	if m == nil {
		return nil
	}
	changed := make([]bool, len(m.servers))
	var wg sync.WaitGroup
	for i, s := range m.servers {
		wg.Go(func() { changed[i] = s.refresh(ctx) })
	}
	wg.Wait()
	var out []string
	for i, s := range m.servers {
		if changed[i] {
			out = append(out, s.cfg.Name)
		}
	}
	return out
}

func (s *server) refresh(ctx context.Context) bool {
	s.mu.Lock()
	session, old := s.session, s.listed
	s.mu.Unlock()
	if session == nil {
		return false
	}
	lctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	defer cancel()
	var list []*sdk.Tool
	for t, err := range session.Tools(lctx, nil) {
		if err != nil {
			return false
		}
		list = append(list, t)
	}
	if listKey(list) == listKey(old) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != session {
		return false // restarted meanwhile
	}
	s.listed = list
	return true
}

// listKey identifies a tool list by what the model sees of it, whatever the server's order.
func listKey(list []*sdk.Tool) string {
	keys := make([]string, 0, len(list))
	for _, t := range list {
		schema, _ := json.Marshal(t.InputSchema)
		keys = append(keys, t.Name+"\x00"+t.Description+"\x00"+string(schema))
	}
	slices.Sort(keys)
	return strings.Join(keys, "\x01")
}
