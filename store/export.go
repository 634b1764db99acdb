package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// ExportVersion is the version of the JSONL export format Export writes and Import reads.
//
// The format, one JSON object per line:
//
//	{"spool_export":1,"exported_at":"...","sessions":N}                  header, first line
//	{"type":"session","id":"...",...,"system_prompt":"..."}              each session ...
//	{"type":"message","session_id":"...","id":7,"role":"user",...}      ... then its rows in id order
//
// A session's line comes after its parent's when both are in the file, and every message line
// follows the line of the session it belongs to. Message ids are the exporter's; Import assigns
// fresh ones and keeps the order. Unknown fields are refused, so nothing in a file is ever
// dropped silently.
const ExportVersion = 1

// ExportSource is what Export reads; every Backend satisfies it.
type ExportSource interface {
	GetSession(ctx context.Context, id string) (Session, error)
	ListSessions(ctx context.Context, o ListOptions) ([]SessionListing, error)
	Children(ctx context.Context, id string) ([]Session, error)
	SystemPrompt(ctx context.Context, id string) (string, error)
	Conversation(ctx context.Context, sessionID string, v View) ([]Message, error)
}

var _ ExportSource = Backend(nil)

// ImportTarget is what Import writes through; every Backend satisfies it.
type ImportTarget interface {
	GetSession(ctx context.Context, id string) (Session, error)
	ImportSession(ctx context.Context, s Session, prompt string, ms []Message) error
}

var _ ImportTarget = Backend(nil)

// maxExportLine bounds one line of an import file, so garbage cannot exhaust memory.
const maxExportLine = 256 << 20

type exportHeader struct {
	Version    *int      `json:"spool_export"`
	ExportedAt time.Time `json:"exported_at"`
	Sessions   int       `json:"sessions"`
}

type sessionLine struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Source           string          `json:"source,omitempty"`
	UserID           string          `json:"user_id,omitempty"`
	SessionKey       string          `json:"session_key,omitempty"`
	Title            string          `json:"title,omitempty"`
	Model            string          `json:"model,omitempty"`
	ModelConfig      json.RawMessage `json:"model_config,omitempty"`
	SystemPromptHash string          `json:"system_prompt_hash,omitempty"`
	SystemPrompt     string          `json:"system_prompt,omitempty"`
	ParentID         string          `json:"parent_id,omitempty"`
	Relation         Relation        `json:"relation,omitempty"`
	StartedAt        time.Time       `json:"started_at"`
	EndedAt          *time.Time      `json:"ended_at,omitempty"`
	EndReason        string          `json:"end_reason,omitempty"`
	MessageCount     int             `json:"message_count"`
	ToolCallCount    int             `json:"tool_call_count"`
	Usage            Usage           `json:"usage"`
	Cwd              string          `json:"cwd,omitempty"`
	GitBranch        string          `json:"git_branch,omitempty"`
}

type messageLine struct {
	Type       string     `json:"type"`
	SessionID  string     `json:"session_id"`
	ID         int64      `json:"id"`
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	APIContent string     `json:"api_content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolName   string     `json:"tool_name,omitempty"`
	Reasoning  string     `json:"reasoning,omitempty"`
	// ReasoningDetails travels as a string: encoding/json would re-compact a raw value, and
	// these bytes must replay exactly.
	ReasoningDetails string    `json:"reasoning_details,omitempty"`
	FinishReason     string    `json:"finish_reason,omitempty"`
	TokenCount       int       `json:"token_count,omitempty"`
	Timestamp        time.Time `json:"timestamp"`
	Summary          bool      `json:"summary"`
	Active           bool      `json:"active"`
	Compacted        bool      `json:"compacted"`
}

func toSessionLine(s Session, prompt string) sessionLine {
	l := sessionLine{
		Type: "session", ID: s.ID, Source: s.Source, UserID: s.UserID, SessionKey: s.SessionKey,
		Title: s.Title, Model: s.Model, ModelConfig: s.ModelConfig,
		SystemPromptHash: s.SystemPromptHash, SystemPrompt: prompt,
		ParentID: s.ParentID, Relation: s.Relation, StartedAt: s.StartedAt, EndReason: s.EndReason,
		MessageCount: s.MessageCount, ToolCallCount: s.ToolCallCount, Usage: s.Usage,
		Cwd: s.Cwd, GitBranch: s.GitBranch,
	}
	if !s.EndedAt.IsZero() {
		t := s.EndedAt
		l.EndedAt = &t
	}
	return l
}

func (l sessionLine) session() Session {
	s := Session{
		ID: l.ID, Source: l.Source, UserID: l.UserID, SessionKey: l.SessionKey, Title: l.Title,
		Model: l.Model, ModelConfig: l.ModelConfig, SystemPromptHash: l.SystemPromptHash,
		ParentID: l.ParentID, Relation: l.Relation, StartedAt: l.StartedAt, EndReason: l.EndReason,
		MessageCount: l.MessageCount, ToolCallCount: l.ToolCallCount, Usage: l.Usage,
		Cwd: l.Cwd, GitBranch: l.GitBranch,
	}
	if l.EndedAt != nil {
		s.EndedAt = *l.EndedAt
	}
	if bytes.Equal(bytes.TrimSpace(s.ModelConfig), []byte("null")) {
		s.ModelConfig = nil
	}
	return s
}

func toMessageLine(m Message) messageLine {
	return messageLine{
		Type: "message", SessionID: m.SessionID, ID: m.ID, Role: m.Role, Content: m.Content,
		APIContent: m.APIContent, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID,
		ToolName: m.ToolName, Reasoning: m.Reasoning, ReasoningDetails: string(m.ReasoningDetails),
		FinishReason: m.FinishReason, TokenCount: m.TokenCount, Timestamp: m.Timestamp,
		Summary: m.Summary, Active: m.Active, Compacted: m.Compacted,
	}
}

func (l messageLine) message() Message {
	var details json.RawMessage
	if l.ReasoningDetails != "" {
		details = json.RawMessage(l.ReasoningDetails)
	}
	return Message{
		ID: l.ID, SessionID: l.SessionID, Role: l.Role, Content: l.Content,
		APIContent: l.APIContent, ToolCalls: l.ToolCalls, ToolCallID: l.ToolCallID,
		ToolName: l.ToolName, Reasoning: l.Reasoning, ReasoningDetails: details,
		FinishReason: l.FinishReason, TokenCount: l.TokenCount, Timestamp: l.Timestamp,
		Summary: l.Summary, Active: l.Active, Compacted: l.Compacted,
	}
}

// Export writes the sessions named by ids (exact ids; all sessions when ids is empty) as JSONL to
// w. With tree, each named session brings its descendants (branches, compression continuations,
// delegates, recursively). Messages are every row of a session (ViewAll) in id order. progress,
// when non-nil, is called with the number of lines written so far.
func Export(ctx context.Context, st ExportSource, w io.Writer, ids []string, tree bool, progress func(n int)) error {
	sessions, err := exportSet(ctx, st, ids, tree)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	v := ExportVersion
	if err := enc.Encode(exportHeader{Version: &v, ExportedAt: time.Now().UTC(), Sessions: len(sessions)}); err != nil {
		return fmt.Errorf("export: write header: %w", err)
	}
	lines := 1
	report := func() {
		if progress != nil {
			progress(lines)
		}
	}
	report()
	for _, s := range sessions {
		prompt, err := st.SystemPrompt(ctx, s.ID)
		if err != nil {
			return fmt.Errorf("export %s: system prompt: %w", s.ID, err)
		}
		if err := enc.Encode(toSessionLine(s, prompt)); err != nil {
			return fmt.Errorf("export %s: %w", s.ID, err)
		}
		lines++
		report()
		ms, err := st.Conversation(ctx, s.ID, ViewAll)
		if err != nil {
			return fmt.Errorf("export %s: messages: %w", s.ID, err)
		}
		for _, m := range ms {
			m.SessionID = s.ID
			if err := enc.Encode(toMessageLine(m)); err != nil {
				return fmt.Errorf("export %s: message %d: %w", s.ID, m.ID, err)
			}
			lines++
			if lines%256 == 0 {
				report()
			}
		}
		report()
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// exportSet loads the sessions to export, each parent before its children.
func exportSet(ctx context.Context, st ExportSource, ids []string, tree bool) ([]Session, error) {
	byID := map[string]Session{}
	var order []string
	add := func(s Session) bool {
		if _, ok := byID[s.ID]; ok {
			return false
		}
		byID[s.ID] = s
		order = append(order, s.ID)
		return true
	}
	if len(ids) == 0 {
		all, err := st.ListSessions(ctx, ListOptions{IncludeChildren: true})
		if err != nil {
			return nil, fmt.Errorf("export: list sessions: %w", err)
		}
		for _, l := range all {
			add(l.Session)
		}
	}
	for _, id := range ids {
		s, err := st.GetSession(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", id, err)
		}
		if !add(s) || !tree {
			continue
		}
		queue := []string{s.ID}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			kids, err := st.Children(ctx, cur)
			if err != nil {
				return nil, fmt.Errorf("export %s: children of %s: %w", id, cur, err)
			}
			for _, k := range kids {
				if add(k) {
					queue = append(queue, k.ID)
				}
			}
		}
	}
	// Parents first, so Import never meets a child whose parent is still to come.
	out := make([]Session, 0, len(order))
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(id string)
	visit = func(id string) {
		if state[id] != 0 {
			return
		}
		state[id] = 1
		s := byID[id]
		if _, ok := byID[s.ParentID]; ok && s.ParentID != id {
			visit(s.ParentID)
		}
		state[id] = 2
		out = append(out, s)
	}
	for _, id := range order {
		visit(id)
	}
	return out, nil
}

// PutSession stores one exported session inside a bundle import (see BundleImporter). An
// existing id returns ErrExists and stores nothing.
type PutSession func(s Session, prompt string, ms []Message) error

// BundleImporter is implemented by backends that can import a whole file in one transaction.
// ImportBundle calls fill once per attempt, inside one write transaction; fill calls put for
// each session in order. If fill returns an error nothing is stored. A backend may call fill
// again (a retried transaction): fill must start over each time.
type BundleImporter interface {
	ImportBundle(ctx context.Context, fill func(put PutSession) error) error
}

// ImportResult says what an import did.
type ImportResult struct {
	Sessions int `json:"sessions"` // sessions imported
	Messages int `json:"messages"` // messages imported
	// Skipped lists sessions already in the store: they were left exactly as they were.
	Skipped []string `json:"skipped"`
	// Orphaned lists imported sessions whose parent was neither in the file nor in the store;
	// they were imported without a parent link.
	Orphaned []string `json:"orphaned"`
}

// ImportLineError is a problem with one line of an import file.
type ImportLineError struct {
	Line   int
	Reason string
}

func (e *ImportLineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ImportLineError) Is(target error) bool { return target == ErrInvalid }

// Import reads a file written by Export and stores its sessions, parents before children. The
// whole file is validated before anything is written (format, ids, titles, relations): a bad
// line returns an *ImportLineError naming it and the store is left untouched. A store that is a
// BundleImporter stores the whole file in one transaction, so a write that still fails stores
// nothing either; other stores get one ImportSession per session. Sessions whose id
// already exists are skipped and listed, never overwritten. progress, when non-nil, is called
// with the number of lines imported so far.
//
// When r can seek (a file) it is read twice, holding one session at a time in memory;
// any other reader is buffered whole.
func Import(ctx context.Context, st ImportTarget, r io.Reader, progress func(n int)) (ImportResult, error) {
	rs, ok := r.(io.ReadSeeker)
	var start int64
	if ok {
		// A pipe is an *os.File too, but cannot seek.
		var err error
		if start, err = rs.Seek(0, io.SeekCurrent); err != nil {
			ok = false
		}
	}
	if !ok {
		data, err := io.ReadAll(r)
		if err != nil {
			return ImportResult{}, fmt.Errorf("import: read: %w", err)
		}
		rs, start = bytes.NewReader(data), 0
	}
	plan, err := validateImport(rs)
	if err != nil {
		return ImportResult{}, err
	}
	if _, err := rs.Seek(start, io.SeekStart); err != nil {
		return ImportResult{}, fmt.Errorf("import: rewind: %w", err)
	}

	// Existing sessions are decided before writing, so a parent that is skipped still counts
	// as present for its children.
	exists := map[string]bool{}
	for _, id := range plan.order {
		_, err := st.GetSession(ctx, id)
		switch {
		case err == nil:
			exists[id] = true
		case errors.Is(err, ErrNotFound):
		default:
			return ImportResult{}, fmt.Errorf("import: look up %s: %w", id, err)
		}
	}
	parentKnown := map[string]bool{}
	for _, id := range plan.order {
		p := plan.parent[id]
		if p == "" || plan.has[p] || exists[p] {
			parentKnown[id] = true
			continue
		}
		_, err := st.GetSession(ctx, p)
		switch {
		case err == nil:
			parentKnown[id] = true
		case errors.Is(err, ErrNotFound):
		default:
			return ImportResult{}, fmt.Errorf("import: look up parent %s: %w", p, err)
		}
	}

	var res ImportResult
	fill := func(put PutSession) error {
		res = ImportResult{} // fill may run again when a transaction is retried
		if _, err := rs.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("import: rewind: %w", err)
		}
		return importLines(rs, plan, exists, parentKnown, put, &res, progress)
	}
	if bi, ok := st.(BundleImporter); ok {
		if err = bi.ImportBundle(ctx, fill); err != nil {
			return ImportResult{}, err // the transaction stored nothing
		}
		return res, nil
	} else {
		err = fill(func(s Session, prompt string, ms []Message) error { return st.ImportSession(ctx, s, prompt, ms) })
	}
	if err != nil {
		return res, err
	}
	return res, nil
}

// importLines reads the (validated) file and puts each session with its messages.
func importLines(rs io.Reader, plan importPlan, exists, parentKnown map[string]bool, put PutSession, res *ImportResult, progress func(n int)) error {
	lines := 0
	var cur *sessionLine
	var msgs []Message
	flush := func() error {
		if cur == nil {
			return nil
		}
		s := cur.session()
		defer func() { cur, msgs = nil, nil }()
		if exists[s.ID] {
			res.Skipped = append(res.Skipped, s.ID)
			return nil
		}
		if !parentKnown[s.ID] {
			s.ParentID, s.Relation = "", RelationNone
			res.Orphaned = append(res.Orphaned, s.ID)
		}
		err := put(s, cur.SystemPrompt, msgs)
		if errors.Is(err, ErrExists) {
			res.Skipped = append(res.Skipped, s.ID)
			return nil
		}
		if err != nil {
			return fmt.Errorf("import session %s: %w", s.ID, err)
		}
		res.Sessions++
		res.Messages += len(msgs)
		return nil
	}
	err := readLines(rs, func(n int, line []byte) error {
		lines = n
		if n == 1 {
			return nil // header, validated
		}
		var probe struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(line, &probe)
		switch probe.Type {
		case "session":
			if err := flush(); err != nil {
				return err
			}
			var l sessionLine
			if err := strictUnmarshal(line, &l); err != nil {
				return &ImportLineError{Line: n, Reason: err.Error()}
			}
			cur = &l
		case "message":
			l := messageLine{Active: true} // a line without "active" is a row the model sees
			if err := strictUnmarshal(line, &l); err != nil {
				return &ImportLineError{Line: n, Reason: err.Error()}
			}
			msgs = append(msgs, l.message())
		}
		if progress != nil && n%256 == 0 {
			progress(n)
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if progress != nil {
		progress(lines)
	}
	return err
}

// importPlan is what validation learned about a file.
type importPlan struct {
	order  []string
	has    map[string]bool
	parent map[string]string
	line   map[string]int
}

func validateImport(r io.Reader) (importPlan, error) {
	plan := importPlan{has: map[string]bool{}, parent: map[string]string{}, line: map[string]int{}}
	var cur string
	sawHeader := false
	err := readLines(r, func(n int, line []byte) error {
		bad := func(format string, args ...any) error {
			return &ImportLineError{Line: n, Reason: fmt.Sprintf(format, args...)}
		}
		if n == 1 {
			var h exportHeader
			if err := strictUnmarshal(line, &h); err != nil || h.Version == nil {
				return bad(`not a spool export (the first line must be {"spool_export":%d,...})`, ExportVersion)
			}
			if *h.Version != ExportVersion {
				return bad("export format version %d is not supported (this spool reads version %d)", *h.Version, ExportVersion)
			}
			sawHeader = true
			return nil
		}
		var probe struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &probe); err != nil {
			return bad("invalid JSON: %s", jsonReason(err))
		}
		switch probe.Type {
		case "session":
			var l sessionLine
			if err := strictUnmarshal(line, &l); err != nil {
				return bad("session: %s", err)
			}
			if l.ID == "" {
				return bad("session has no id")
			}
			if err := ValidateID(l.ID); err != nil {
				return bad("session %s", err)
			}
			if l.ParentID != "" {
				if err := ValidateID(l.ParentID); err != nil {
					return bad("session %s: parent %s", l.ID, err)
				}
			}
			if _, err := CleanTitle(l.Title); err != nil {
				return bad("session %s: %s", l.ID, err)
			}
			if err := ValidateModelConfig(l.ModelConfig); err != nil && !bytes.Equal(bytes.TrimSpace(l.ModelConfig), []byte("null")) {
				return bad("session %s: %s", l.ID, err)
			}
			switch {
			case plan.has[l.ID]:
				return bad("session %s appears twice", l.ID)
			case !l.Relation.Valid():
				return bad("session %s: unknown relation %q", l.ID, l.Relation)
			case l.ParentID == l.ID:
				return bad("session %s is its own parent", l.ID)
			case l.StartedAt.IsZero():
				return bad("session %s has no started_at", l.ID)
			case len(l.ModelConfig) > 0 && !isJSONObjectOrNull(l.ModelConfig):
				return bad("session %s: model_config must be a JSON object", l.ID)
			}
			plan.has[l.ID] = true
			plan.line[l.ID] = n
			plan.parent[l.ID] = l.ParentID
			plan.order = append(plan.order, l.ID)
			cur = l.ID
		case "message":
			var l messageLine
			if err := strictUnmarshal(line, &l); err != nil {
				return bad("message: %s", err)
			}
			switch {
			case cur == "":
				return bad("message before any session line")
			case l.SessionID != cur:
				return bad("message belongs to session %q but follows session %s", l.SessionID, cur)
			}
			switch l.Role {
			case RoleSystem, RoleUser, RoleAssistant, RoleTool:
			default:
				return bad("message has unknown role %q", l.Role)
			}
			if l.ReasoningDetails != "" && !json.Valid([]byte(l.ReasoningDetails)) {
				return bad("message reasoning_details is not valid JSON")
			}
		case "":
			return bad(`line has no "type"`)
		default:
			return bad("unknown line type %q", probe.Type)
		}
		return nil
	})
	if err != nil {
		return plan, err
	}
	if !sawHeader {
		return plan, &ImportLineError{Line: 1, Reason: "empty file: not a spool export"}
	}
	// A parent later in the file would be imported after its child (and could close a cycle);
	// Export never writes that order.
	for _, id := range plan.order {
		if p := plan.parent[id]; p != "" && plan.has[p] && plan.line[p] > plan.line[id] {
			return plan, &ImportLineError{Line: plan.line[id], Reason: fmt.Sprintf("session %s comes before its parent %s (line %d)", id, p, plan.line[p])}
		}
	}
	return plan, nil
}

// readLines calls fn with each non-blank line and its 1-based number.
func readLines(r io.Reader, fn func(n int, line []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	n := 0
	for {
		line, err := readLine(br)
		if len(line) > 0 || err == nil {
			n++
			if len(bytes.TrimSpace(line)) > 0 {
				if ferr := fn(n, line); ferr != nil {
					return ferr
				}
			} else if n == 1 {
				return &ImportLineError{Line: 1, Reason: "empty first line: not a spool export"}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			var le *ImportLineError
			if errors.As(err, &le) {
				le.Line = n + 1
				return le
			}
			return fmt.Errorf("import: read line %d: %w", n+1, err)
		}
	}
}

func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > maxExportLine {
			return nil, &ImportLineError{Reason: fmt.Sprintf("line longer than %d MiB", maxExportLine>>20)}
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(buf, "\r\n"), err
	}
}

func strictUnmarshal(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New(jsonReason(err))
	}
	if dec.More() {
		return errors.New("extra data after the JSON object")
	}
	return nil
}

func jsonReason(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("field %q: want %s, got JSON %s", te.Field, te.Type, te.Value)
	}
	return err.Error()
}

func isJSONObjectOrNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return bytes.Equal(t, []byte("null")) || (len(t) > 0 && t[0] == '{' && json.Valid(t))
}
