package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/recall"
)

// DefaultMaxOutput caps a tool result's text, in bytes, unless the tool sets its own cap.
const DefaultMaxOutput = 16 * 1024

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments: an object schema. Call validates arguments
	// against it (type, properties, required, additionalProperties, enum, items, minimum,
	// maximum) before Run sees them.
	Parameters json.RawMessage
	// MaxOutput caps the result text in bytes; zero means DefaultMaxOutput.
	MaxOutput int
	// Run does the work. args is a JSON object that satisfied Parameters. An error becomes an
	// error result the model reads; Run may panic without harming the caller.
	Run func(ctx context.Context, env Env, args json.RawMessage) (string, error)
}

// Env is what a tool call may touch. The agent builds one per session.
type Env struct {
	// WorkDir is where relative paths resolve and where commands run.
	WorkDir string
	// Home is $SPOOL_HOME; the memory tool writes Home/memories/{MEMORY.md,USER.md}.
	Home string
	// SessionID is the calling session, so session_search can leave out what the model
	// already sees; CallID is the tool call being served.
	SessionID string
	CallID    string
	// Journal, when set, keeps what write_file and edit_file change (with SessionID and
	// CallID), so /undo can put the files back.
	Journal *Journal
	// Store is the session store session_search reads; nil disables that tool.
	Store recall.Store
	// Summarizer serves session_search's detail=summary (a model call the agent makes and
	// records); nil makes that detail fall back to raw matches with a note.
	Summarizer recall.Summarizer
	// RecallDetail is session_search's detail when the model names none (config recall.detail:
	// "summary", else adaptive).
	RecallDetail string
	// Workspace confines the file tools: paths outside it need the Approver's consent. Empty
	// means the git root above WorkDir, else WorkDir itself.
	Workspace string
	// ConfirmWrites sends every write_file and edit_file (with its diff) to the Approver, not only writes
	// outside the workspace; `spool chat` sets it.
	ConfirmWrites bool
	// Approver decides whether a command, a write or a file access outside the workspace may go
	// ahead; nil denies them (writes inside the workspace need no approver unless ConfirmWrites).
	Approver Approver
	// Secrets are kept out of every result; nil knows none.
	Secrets *Secrets
	// PassEnv names the environment variables, besides BaseEnv, that a terminal command sees
	// (config tools.env; a name ending in * is a prefix).
	PassEnv []string
}

// Result is the text a tool call returns to the model.
type Result struct {
	Content string
	// IsError is set when the call did not do what was asked (bad arguments, failure, panic,
	// denial, cancellation).
	IsError bool
}

// Registry holds tools by name. It is immutable after New and safe for concurrent use.
type Registry struct {
	byName map[string]*entry
	names  []string
	defs   []provider.Tool
}

type entry struct {
	tool   Tool
	schema *schema
}

var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// New builds a registry. Names must be unique and provider-safe, schemas valid object schemas.
func New(tools ...Tool) (*Registry, error) {
	r := &Registry{byName: make(map[string]*entry, len(tools))}
	for _, t := range tools {
		if !toolName.MatchString(t.Name) {
			return nil, fmt.Errorf("tool name %q: want 1-64 letters, digits, '_' or '-'", t.Name)
		}
		if _, dup := r.byName[t.Name]; dup {
			return nil, fmt.Errorf("tool %s registered twice", t.Name)
		}
		if t.Run == nil {
			return nil, fmt.Errorf("tool %s has no Run function", t.Name)
		}
		canon, err := canonicalJSON(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %s schema: %w", t.Name, err)
		}
		s, err := parseSchema(canon)
		if err != nil {
			return nil, fmt.Errorf("tool %s schema: %w", t.Name, err)
		}
		if s.Type != "object" {
			return nil, fmt.Errorf("tool %s schema: top-level type must be \"object\"", t.Name)
		}
		t.Parameters = canon
		r.byName[t.Name] = &entry{tool: t, schema: s}
		r.names = append(r.names, t.Name)
	}
	slices.Sort(r.names)
	for _, n := range r.names {
		t := r.byName[n].tool
		r.defs = append(r.defs, provider.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return r, nil
}

// Definitions returns the tool definitions sorted by name, with canonical schema bytes. The
// caller may modify the returned slice.
func (r *Registry) Definitions() []provider.Tool {
	out := make([]provider.Tool, len(r.defs))
	for i, d := range r.defs {
		d.Parameters = bytes.Clone(d.Parameters)
		out[i] = d
	}
	return out
}

// Names returns the tool names, sorted.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

// Call runs tool name with the model's JSON arguments. It always returns a Result the model can
// read, whatever the tool does.
func (r *Registry) Call(ctx context.Context, env Env, name, args string) Result {
	e, ok := r.byName[name]
	if !ok {
		return Result{IsError: true, Content: fmt.Sprintf("unknown tool %q; available tools: %s", name, strings.Join(r.names, ", "))}
	}
	raw, v, err := argsObject(args)
	if err == nil {
		err = e.schema.check("", v)
	}
	if err != nil {
		return Result{IsError: true, Content: fmt.Sprintf("invalid arguments for %s: %v", name, err)}
	}
	limit := e.tool.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	out, err := run(ctx, e.tool, env, raw)
	if err == nil {
		return Result{Content: Truncate(env.Secrets.Redact(out), limit)}
	}
	msg := fmt.Sprintf("tool %s failed: %v", name, err)
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		msg = fmt.Sprintf("tool %s cancelled: %v", name, context.Cause(ctx))
	}
	if out != "" {
		msg += "\n" + out
	}
	return Result{IsError: true, Content: Truncate(env.Secrets.Redact(msg), limit)}
}

// run calls the tool, turning a panic into an error that names it.
func run(ctx context.Context, t Tool, env Env, args json.RawMessage) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out = ""
			err = fmt.Errorf("panic: %v\n%s", p, firstFrames(debug.Stack(), 12))
		}
	}()
	return t.Run(ctx, env, args)
}

// firstFrames keeps the start of a stack trace: enough to locate the bug, not enough to flood.
func firstFrames(stack []byte, lines int) string {
	s := string(stack)
	for i, n := 0, 0; i < len(s); i++ {
		if s[i] == '\n' {
			n++
			if n == lines {
				return s[:i]
			}
		}
	}
	return strings.TrimRight(s, "\n")
}

// argsObject checks that args is one JSON object and returns it both as text and decoded (numbers
// as json.Number, for schema checks); empty text means no arguments.
func argsObject(args string) (json.RawMessage, map[string]any, error) {
	args = strings.TrimSpace(args)
	if args == "" {
		return json.RawMessage("{}"), map[string]any{}, nil
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, nil, errors.New("not valid JSON: extra data after the arguments object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("want a JSON object, got %s", jsonKind(v))
	}
	return json.RawMessage(args), obj, nil
}

// canonicalJSON re-encodes a JSON value with sorted object keys and no insignificant space, so
// equal schemas give equal bytes however they were written.
func canonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("empty")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not valid JSON: extra data")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
