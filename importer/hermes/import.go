package hermes

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/regfile"
	"github.com/spoolhq/spool/store"
)

// Store is what an import needs of a store.
type Store interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	ImportSession(ctx context.Context, s store.Session, prompt string, ms []store.Message) error
	GetRoute(ctx context.Context, key string) (store.Route, error)
	PutRoute(ctx context.Context, r store.Route) error
}

// Options tune an import.
type Options struct {
	// Progress, when set, is called after each session with the messages read so far and the
	// number expected in all.
	Progress func(done, total int)
	// Warn, when set, receives each skipped transcript line as it is found.
	Warn func(msg string)
	// SpoolHome, when set, is the spool home the reference's memory files and config.yaml are
	// brought into (its memories/ and config.yaml); empty imports sessions and routes only.
	SpoolHome string
}

// Report says what an import stored and what it skipped.
type Report struct {
	Home          string `json:"home"`
	SchemaVersion int    `json:"schema_version"` // of state.db (0 without one)
	Sessions      int    `json:"sessions"`
	Messages      int    `json:"messages"`
	// Relations counts imported child sessions by their lineage relation.
	Relations     map[string]int `json:"relations"`
	SystemPrompts int            `json:"system_prompts"` // distinct prompts of the imported sessions
	// FromJSONL counts sessions whose legacy transcript was longer than their SQLite rows and
	// was imported instead; JSONLOnly those that existed only as a transcript.
	FromJSONL int `json:"from_jsonl"`
	JSONLOnly int `json:"jsonl_only"`
	Routes    int `json:"routes"`
	Suspended int `json:"suspended_routes"`
	// Memory counts the entries of memories/MEMORY.md and USER.md added to spool's memory files
	// of the same name (entries spool already held are not counted).
	Memory map[string]int `json:"memory"`
	// Config lists the spool settings taken from config.yaml ("provider.model: gpt-4o").
	Config []string `json:"config"`
	// Skipped lists what was not imported (or imported in part), each with its reason.
	Skipped []Skip `json:"skipped"`
}

// Skip is one thing an import left out, and why.
type Skip struct {
	Kind   string `json:"kind"` // session, message, jsonl_line, file, route, tool_calls, field, parent
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// End reasons of the reference that start a fresh session for the same key (its reset set).
// compactionPrefix opens the reference's compaction summary message.
const compactionPrefix = "[CONTEXT COMPACTION]"

var resetReasons = map[string]bool{"session_reset": true, "session_switch": true, "idle": true, "daily": true,
	"suspended": true, "resume_pending_expired": true}

// Home is a Hermes home opened for import: everything that can reject it has been read.
type Home struct {
	dir     string
	src     *source // nil without a state.db
	idx     []*entry
	files   map[string]string // legacy transcripts by session id
	gateway []gatewayEntry
	set     settings
	skips   []Skip
	total   int
}

// Open reads the Hermes home dir: a missing directory, one that is not a Hermes home, a corrupt
// or foreign state.db or an unreadable sessions.json is an error, before anything is stored.
// The caller closes the home.
func Open(ctx context.Context, dir string) (*Home, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, pathErr(err))
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	h := &Home{dir: dir}
	dbPath := filepath.Join(dir, "state.db")
	sessDir := filepath.Join(dir, "sessions")
	if h.files, h.skips, err = transcripts(sessDir); err != nil {
		return nil, err
	}
	gwPath := filepath.Join(sessDir, "sessions.json")
	hasDB, err := stateDB(dbPath)
	if err != nil {
		return nil, err
	}
	if h.set, err = readSettings(dir); err != nil {
		return nil, err
	}
	if !hasDB && len(h.files) == 0 && !regular(gwPath) && h.set.empty() {
		return nil, fmt.Errorf("%s is not a Hermes home (no state.db, no sessions/sessions.json, no sessions/*.jsonl, no memories/, no config.yaml)", dir)
	}
	var gwSkips []Skip
	if h.gateway, gwSkips, err = readGateway(gwPath); err != nil {
		return nil, err
	}
	h.skips = append(h.skips, gwSkips...)
	if hasDB {
		if h.src, err = openSource(ctx, dbPath); err != nil {
			return nil, err
		}
		if h.idx, err = h.src.index(ctx); err != nil {
			h.Close()
			return nil, err
		}
		if h.total, err = h.src.totalMessages(ctx); err != nil {
			h.Close()
			return nil, fmt.Errorf("state.db: %w", err)
		}
	}
	return h, nil
}

// Close releases state.db.
func (h *Home) Close() error {
	if h.src == nil {
		return nil
	}
	return h.src.close()
}

// Messages is the number of message rows in state.db.
func (h *Home) Messages() int { return h.total }

// Import opens the Hermes home dir, imports it into st and closes it.
func Import(ctx context.Context, st Store, dir string, opts Options) (Report, error) {
	h, err := Open(ctx, dir)
	if err != nil {
		return Report{Home: dir, Relations: map[string]int{}, Memory: map[string]int{}, Config: []string{}, Skipped: []Skip{}}, err
	}
	defer h.Close()
	return h.Import(ctx, st, opts)
}

// Import stores the home's sessions, transcripts and routes in st. See the package
// documentation for the contract. An error means the store failed: what was imported so far
// stays, and a rerun completes it.
func (h *Home) Import(ctx context.Context, st Store, opts Options) (Report, error) {
	rep := Report{Home: h.dir, Relations: map[string]int{}, Memory: map[string]int{}, Config: []string{},
		Skipped: append([]Skip{}, h.skips...)}
	if h.src != nil {
		rep.SchemaVersion = h.src.version
	}
	im := &importer{st: st, src: h.src, opts: opts, rep: &rep, total: h.total, prompts: map[[32]byte]bool{},
		present: map[string]bool{}, keyOf: map[string]string{}, platformOf: map[string]string{}, threadOf: map[string]string{}}
	defer im.wait() // an import that stops early still waits for its batch in flight
	for _, g := range h.gateway {
		if _, ok := im.keyOf[g.route.SessionID]; !ok {
			im.keyOf[g.route.SessionID] = g.route.Key
			im.platformOf[g.route.SessionID] = g.platform
		}
		if g.thread != "" {
			im.threadOf[g.route.SessionID] = g.thread
		}
	}

	inDB := map[string]bool{}
	for _, e := range ordered(h.idx, &rep) {
		inDB[e.id] = true
		if err := im.dbSession(ctx, e, h.files[e.id]); err != nil {
			return rep, err
		}
	}
	ids := make([]string, 0, len(h.files))
	for id := range h.files {
		if !inDB[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := im.jsonlSession(ctx, id, h.files[id]); err != nil {
			return rep, err
		}
	}
	if err := im.flush(ctx); err != nil {
		return rep, err
	}
	if err := im.collect(ctx); err != nil {
		return rep, err
	}
	for _, g := range h.gateway {
		r := g.route
		r.Key = im.laneKey(r.Key, r.SessionID)
		if err := im.route(ctx, r); err != nil {
			return rep, err
		}
	}
	rep.SystemPrompts = len(im.prompts)
	if opts.SpoolHome != "" {
		if err := h.set.importMemory(opts.SpoolHome, &rep); err != nil {
			return rep, err
		}
		if err := h.set.importConfig(opts.SpoolHome, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// stateDB reports whether the home has a state.db. One that is there but is not a regular file
// (a directory, a named pipe, a device) is an error: taken as absent, the import would go on
// from the transcripts alone, and a later import would skip those sessions' metadata for good.
func stateDB(path string) (bool, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("state.db: %w", pathErr(err))
	case !fi.Mode().IsRegular():
		return false, fmt.Errorf("%s %w", path, &regfile.NotRegularError{Mode: fi.Mode()})
	}
	return true, nil
}

func regular(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// ordered returns the sessions parents first (roots by start time), so every parent is imported
// before its children. A session in a parent cycle is imported as a root.
func ordered(idx []*entry, rep *Report) []*entry {
	byID := make(map[string]*entry, len(idx))
	for _, e := range idx {
		byID[e.id] = e
	}
	children := map[string][]*entry{}
	var roots []*entry
	for _, e := range idx {
		if p, ok := byID[e.parent]; ok && e.parent != e.id {
			children[p.id] = append(children[p.id], e)
		} else {
			roots = append(roots, e)
		}
	}
	out := make([]*entry, 0, len(idx))
	seen := make(map[string]bool, len(idx))
	var walk func(e *entry)
	walk = func(e *entry) {
		stack := []*entry{e}
		for len(stack) > 0 {
			cur := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[cur.id] {
				continue
			}
			seen[cur.id] = true
			out = append(out, cur)
			kids := children[cur.id]
			for i := len(kids) - 1; i >= 0; i-- {
				stack = append(stack, kids[i])
			}
		}
	}
	for _, r := range roots {
		walk(r)
	}
	for _, e := range idx {
		if !seen[e.id] {
			rep.Skipped = append(rep.Skipped, Skip{Kind: "parent", ID: e.id, Reason: "parent chain loops; imported without its parent"})
			e.parent = ""
			walk(e)
		}
	}
	return out
}

type importer struct {
	st      Store
	src     *source
	opts    Options
	rep     *Report
	total   int
	done    int
	prompts map[[32]byte]bool
	// present holds the sessions the store has (imported now or before), by id.
	present map[string]bool
	// batch holds converted sessions not yet stored (see flush); queued their ids.
	batch      []pendingSession
	batchBytes int
	batchMsgs  int
	queued     map[string]bool
	// inflight is the batch a writer goroutine is storing; inflightDone receives its result.
	inflight     []pendingSession
	inflightDone chan error
	byID         map[string]*entry
	keyOf        map[string]string // session id → gateway key
	platformOf   map[string]string
	threadOf     map[string]string // session id → its lane's thread id, from sessions.json
}

func (im *importer) skip(kind, id, reason string) {
	im.rep.Skipped = append(im.rep.Skipped, Skip{Kind: kind, ID: id, Reason: reason})
}

func (im *importer) progress(n int) {
	im.done += n
	if im.opts.Progress != nil {
		im.opts.Progress(im.done, max(im.total, im.done))
	}
}

// exists reports whether the store already has id.
func (im *importer) exists(ctx context.Context, id string) (bool, error) {
	if im.present[id] || im.queued[id] {
		return true, nil
	}
	_, err := im.st.GetSession(ctx, id)
	switch {
	case err == nil:
		im.present[id] = true
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("look up %s: %w", id, err)
	}
}

// relation classifies e against its parent p as Hermes Agent does.
func relation(e, p *entry) store.Relation {
	switch {
	case e.branchedFrom == p.id || (e.branchedFrom == "" && p.endReason == "branched" && !p.ended.After(e.started)):
		return store.RelationBranch
	case e.delegateFrom == p.id:
		return store.RelationDelegate
	case e.resetFrom == p.id || (resetReasons[p.endReason] && e.key != "" && e.key == p.key):
		return store.RelationReset
	case e.source == "tool" || e.source == "subagent":
		return store.RelationDelegate
	case p.endReason == store.EndCompression:
		return store.RelationCompression
	}
	return store.RelationNone
}

func (im *importer) dbSession(ctx context.Context, e *entry, jsonlPath string) error {
	if im.byID == nil {
		im.byID = map[string]*entry{}
	}
	im.byID[e.id] = e
	if e.key == "" {
		e.key = im.keyOf[e.id]
	}
	if ok, err := im.exists(ctx, e.id); err != nil || ok {
		if ok {
			im.skip("session", e.id, "already in the store")
			n, err := im.src.count(ctx, e.id)
			im.progress(n)
			return err
		}
		return err
	}
	row, err := im.src.session(ctx, e.id)
	if err != nil {
		return err
	}
	s := store.Session{ID: e.id, Source: e.source, UserID: row.userID, SessionKey: im.laneKey(e.key, e.id), Title: row.title,
		Model: row.model, ModelConfig: e.config, StartedAt: e.started, EndedAt: e.ended, EndReason: e.endReason,
		Usage: row.usage, Cwd: row.cwd, GitBranch: row.branch}
	if s.Source == "" {
		s.Source = "unknown"
	}
	if e.badConfig != "" {
		im.skip("field", e.id, e.badConfig+"; imported without it")
	}
	if s.StartedAt.IsZero() {
		s.StartedAt = sessionStart(e.id, "")
	}
	if p := im.byID[e.parent]; p != nil {
		if ok, err := im.exists(ctx, p.id); err != nil {
			return err
		} else if ok {
			s.ParentID, s.Relation = p.id, relation(e, p)
		}
	}
	if e.parent != "" && s.ParentID == "" {
		im.skip("parent", e.id, fmt.Sprintf("parent %s was not imported; imported as a root", e.parent))
	}

	var msgs []store.Message
	fromJSONL := false
	n := 0 // SQLite rows read
	if jsonlPath != "" {
		if n, err = im.src.count(ctx, e.id); err != nil {
			return err
		}
		t, err := readTranscript(jsonlPath, "sessions/"+filepath.Base(jsonlPath), s.StartedAt)
		if err != nil {
			return err
		}
		im.noteTranscript(t)
		// The reference's rule: the JSONL wins only when it is strictly longer.
		if len(t.messages) > n {
			msgs, fromJSONL = t.messages, true
			im.rep.Skipped = append(im.rep.Skipped, t.notes...)
		}
	}
	if !fromJSONL {
		n = 0
		last := s.StartedAt
		err := im.src.messages(ctx, e.id, func(r rawMessage) error {
			n++
			m, skip, notes := convert(e.id, r)
			im.rep.Skipped = append(im.rep.Skipped, notes...)
			if skip != nil {
				im.rep.Skipped = append(im.rep.Skipped, *skip)
				return nil
			}
			if !r.summary.Valid && s.Relation == store.RelationCompression && strings.HasPrefix(m.Content, compactionPrefix) {
				m.Summary = true // schemas before the summary flag mark the carrier by its prefix only
			}
			if m.Timestamp.IsZero() {
				m.Timestamp = last
			}
			last = m.Timestamp
			msgs = append(msgs, m)
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := im.queue(ctx, pendingSession{s: s, prompt: row.prompt, msgs: msgs, fromJSONL: fromJSONL}); err != nil {
		return err
	}
	im.progress(n)
	return nil
}

// laneKey is spool's key for the lane that the Hermes key names, sessionID's (laneKey), with
// the thread id sessions.json or the session row gives.
func (im *importer) laneKey(key, sessionID string) string {
	if key == "" {
		return ""
	}
	thread := im.threadOf[sessionID]
	if e := im.byID[sessionID]; thread == "" && e != nil {
		thread = e.thread
	}
	return laneKey(key, thread)
}

func (im *importer) noteTranscript(t transcript) {
	for _, sk := range t.skipped {
		if im.opts.Warn != nil {
			im.opts.Warn(fmt.Sprintf("%s: %s, skipped", sk.ID, sk.Reason))
		}
	}
	im.rep.Skipped = append(im.rep.Skipped, t.skipped...)
}

func (im *importer) jsonlSession(ctx context.Context, id, path string) error {
	if ok, err := im.exists(ctx, id); err != nil || ok {
		if ok {
			im.skip("session", id, "already in the store")
		}
		return err
	}
	start := sessionStart(id, path)
	t, err := readTranscript(path, "sessions/"+filepath.Base(path), start)
	if err != nil {
		return err
	}
	im.noteTranscript(t)
	if len(t.messages) == 0 {
		im.skip("session", id, "sessions/"+filepath.Base(path)+" holds no messages")
		return nil
	}
	im.rep.Skipped = append(im.rep.Skipped, t.notes...)
	s := store.Session{ID: id, Source: "unknown", SessionKey: im.laneKey(im.keyOf[id], id), StartedAt: start}
	if p := im.platformOf[id]; p != "" {
		s.Source = p
	}
	return im.queue(ctx, pendingSession{s: s, msgs: t.messages, jsonl: true})
}

// A batch of sessions is stored in one transaction when the store can (store.BundleImporter):
// one commit and one full-text segment per batch instead of per session. A batch is bounded by
// messages and by bytes, so memory does not grow with the home.
const (
	batchMessages = 8192
	batchBytes    = 32 << 20
)

type pendingSession struct {
	s      store.Session
	prompt string
	msgs   []store.Message
	jsonl  bool // a JSONL-only session (counted as such once stored)
	// fromJSONL: a session whose longer legacy transcript replaced its rows.
	fromJSONL bool
}

// queue adds one session to the batch, flushing the batch when it is full (or stores it at
// once when the store has no bundle import). A title spool cannot store is dropped with a note.
func (im *importer) queue(ctx context.Context, p pendingSession) error {
	if _, err := store.CleanTitle(p.s.Title); err != nil {
		im.skip("field", p.s.ID, "imported without its title: "+err.Error())
		p.s.Title = ""
	}
	if _, ok := im.st.(store.BundleImporter); !ok {
		return im.storeOne(ctx, p)
	}
	if im.queued == nil {
		im.queued = map[string]bool{}
	}
	im.batch = append(im.batch, p)
	im.queued[p.s.ID] = true
	im.batchBytes += len(p.prompt)
	im.batchMsgs += len(p.msgs)
	for _, m := range p.msgs {
		im.batchBytes += len(m.Content) + len(m.Reasoning) + len(m.ReasoningDetails) + 64*len(m.ToolCalls) + 128
	}
	if im.batchMsgs >= batchMessages || im.batchBytes >= batchBytes {
		return im.flush(ctx)
	}
	return nil
}

// flush hands the queued sessions to a writer goroutine that stores them in one transaction,
// after collecting the batch before it: reading and converting the next batch overlaps the
// write of this one, with at most one batch in flight. All bookkeeping (reports, the present
// set) happens on the importer's goroutine.
func (im *importer) flush(ctx context.Context) error {
	if err := im.collect(ctx); err != nil {
		return err
	}
	batch := im.batch
	im.batch, im.batchBytes, im.batchMsgs = nil, 0, 0
	if len(batch) == 0 {
		return nil
	}
	// A parent refused in an earlier batch is not in the store: its children import as roots.
	inBatch := make(map[string]bool, len(batch))
	for i := range batch {
		p := &batch[i]
		if p.s.ParentID != "" && !im.present[p.s.ParentID] && !inBatch[p.s.ParentID] {
			im.skip("parent", p.s.ID, fmt.Sprintf("parent %s was not imported; imported as a root", p.s.ParentID))
			p.s.ParentID, p.s.Relation = "", store.RelationNone
		}
		inBatch[p.s.ID] = true
	}
	bi := im.st.(store.BundleImporter)
	done := make(chan error, 1)
	im.inflight, im.inflightDone = batch, done
	go func() {
		done <- bi.ImportBundle(ctx, func(put store.PutSession) error {
			for _, p := range batch {
				if err := put(p.s, p.prompt, p.msgs); err != nil {
					return err
				}
			}
			return nil
		})
	}()
	return nil
}

// wait waits for the batch in flight, if any, without accounting for it.
func (im *importer) wait() {
	if im.inflightDone != nil {
		<-im.inflightDone
		im.inflight, im.inflightDone = nil, nil
	}
}

// collect waits for the batch in flight, if any, and accounts for it. If the store refused one
// of its sessions (it exists meanwhile, or is invalid) the transaction stored nothing and the
// batch is stored one session at a time, so each refusal is reported for its own session.
func (im *importer) collect(ctx context.Context) error {
	if im.inflightDone == nil {
		return nil
	}
	err := <-im.inflightDone
	batch := im.inflight
	im.inflight, im.inflightDone = nil, nil
	for _, p := range batch {
		delete(im.queued, p.s.ID)
	}
	switch {
	case err == nil:
		for _, p := range batch {
			im.stored(p)
		}
		return nil
	case errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrInvalid):
		for _, p := range batch {
			if p.s.ParentID != "" && !im.present[p.s.ParentID] {
				im.skip("parent", p.s.ID, fmt.Sprintf("parent %s was not imported; imported as a root", p.s.ParentID))
				p.s.ParentID, p.s.Relation = "", store.RelationNone
			}
			if err := im.storeOne(ctx, p); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w (%d sessions were imported before the error; run the import again to complete it)", err, im.rep.Sessions)
}

// storeOne imports one session in its own transaction. A session the store refuses as invalid
// is skipped with its reason; any other error stops the import.
func (im *importer) storeOne(ctx context.Context, p pendingSession) error {
	s, prompt, msgs := p.s, p.prompt, p.msgs
	err := im.st.ImportSession(ctx, s, prompt, msgs)
	switch {
	case errors.Is(err, store.ErrExists):
		im.skip("session", s.ID, "already in the store")
		im.present[s.ID] = true
		return nil
	case errors.Is(err, store.ErrInvalid):
		im.skip("session", s.ID, err.Error())
		return nil
	case err != nil:
		return fmt.Errorf("%w (%d sessions were imported before the error; run the import again to complete it)", err, im.rep.Sessions)
	}
	im.stored(p)
	return nil
}

// stored counts a session the store now holds.
func (im *importer) stored(p pendingSession) {
	s, prompt, msgs := p.s, p.prompt, p.msgs
	im.present[s.ID] = true
	if p.jsonl {
		im.rep.JSONLOnly++
	}
	if p.fromJSONL {
		im.rep.FromJSONL++
	}
	im.rep.Sessions++
	im.rep.Messages += len(msgs)
	if s.Relation != store.RelationNone {
		im.rep.Relations[string(s.Relation)]++
	}
	if prompt != "" {
		im.prompts[sha256.Sum256([]byte(store.CleanText(prompt)))] = true
	}
}

func (im *importer) route(ctx context.Context, r store.Route) error {
	ok, err := im.exists(ctx, r.SessionID)
	if err != nil {
		return err
	}
	if !ok {
		im.skip("route", r.Key, fmt.Sprintf("session %s is neither in state.db nor in the store", r.SessionID))
		return nil
	}
	old, err := im.st.GetRoute(ctx, r.Key)
	switch {
	case err == nil:
		im.skip("route", r.Key, "already routed to "+old.SessionID)
		return nil
	case !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("look up route %q: %w", r.Key, err)
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = time.Now()
	}
	if err := im.st.PutRoute(ctx, r); err != nil {
		if errors.Is(err, store.ErrInvalid) {
			im.skip("route", r.Key, err.Error())
			return nil
		}
		return err
	}
	im.rep.Routes++
	if r.Suspended {
		im.rep.Suspended++
	}
	return nil
}
