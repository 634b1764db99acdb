package web

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/web/markup"
)

const listPageSize = 50

// row is one line of the sessions list.
type row struct {
	store.SessionListing
	Live     *store.HeldLease
	Branches []row // branches of this session listed on the same page
	BranchOf string
	Group    string // the top-level row this one is nested under (its own id at the top)
	Depth    int
}

// Name is what a row shows as its title.
func (r row) Name() string {
	switch {
	case r.Title != "":
		return r.Title
	case r.Preview != "":
		return r.Preview
	}
	return r.ID
}

type sessionsData struct {
	baseData
	Rows                  []row
	Source, Model, Cwd, Q string
	Page                  int
	Prev, Next            string // links, "" when none
	Sources, Models, Cwds []string
}

func (s *Server) sessionsPage(w http.ResponseWriter, r *http.Request, v viewer) error {
	ctx := r.Context()
	q := r.URL.Query()
	d := sessionsData{baseData: s.base(r, v, "Sessions"), Source: q.Get("source"), Model: q.Get("model"),
		Cwd: q.Get("cwd"), Q: strings.TrimSpace(q.Get("q"))}
	d.Nav = "sessions"
	d.Page = max(atoiOr(q.Get("page"), 1), 1)
	// The page counts branch trees: each root comes with all its branches, however old.
	ls, err := s.st.ListSessions(ctx, store.ListOptions{Trees: true, Limit: listPageSize + 1, Offset: (d.Page - 1) * listPageSize,
		Source: d.Source, Model: d.Model, Cwd: d.Cwd, Query: d.Q, UserID: v.userFilter()})
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	live, err := s.liveByConversation(ctx)
	if err != nil {
		return err
	}
	d.Rows = groupBranches(ls, live)
	more := len(d.Rows) > listPageSize
	if more {
		d.Rows = d.Rows[:listPageSize]
	}
	link := func(page int) string {
		return s.opts.Prefix + "/" + queryString("source", d.Source, "model", d.Model, "cwd", d.Cwd, "q", d.Q,
			"page", strconv.Itoa(page))
	}
	if d.Page > 1 {
		d.Prev = link(d.Page - 1)
	}
	if more {
		d.Next = link(d.Page + 1)
	}
	d.Sources, d.Models, d.Cwds = distinct(ls)
	if r.Header.Get("HX-Request") == "true" && r.Header.Get("HX-Target") == "rows" {
		return s.render(w, func(m *markup.Writer) { s.rowsHTML(m, d) })
	}
	return s.render(w, func(m *markup.Writer) { s.sessionsHTML(m, d) })
}

// groupBranches nests each branch of a tree listing (store.ListOptions.Trees) under the row
// it branched from, keeping the listing's order (newest activity first) at every level.
func groupBranches(ls []store.SessionListing, live map[string]store.HeldLease) []row {
	children := make(map[string][]int, len(ls))
	listed := make(map[string]bool, len(ls))
	for _, l := range ls {
		listed[l.ID] = true
	}
	var top []int
	for i, l := range ls {
		if l.TreeParent != "" && listed[l.TreeParent] && l.TreeParent != l.ID {
			children[l.TreeParent] = append(children[l.TreeParent], i)
		} else {
			top = append(top, i)
		}
	}
	var build func(i int, group string, depth int) row
	build = func(i int, group string, depth int) row {
		l := ls[i]
		r := row{SessionListing: l, Group: group, Depth: depth}
		if h, ok := live[l.ID]; ok {
			r.Live = &h
		}
		if l.Relation == store.RelationBranch && l.ParentID != "" {
			r.BranchOf = l.ParentID
		}
		for _, c := range children[l.ID] {
			r.Branches = append(r.Branches, build(c, group, depth+1))
		}
		return r
	}
	out := make([]row, 0, len(top))
	for _, i := range top {
		out = append(out, build(i, ls[i].ID, 0))
	}
	return out
}

// Descendants counts the branches nested under a row, at any depth.
func (r row) Descendants() int {
	n := len(r.Branches)
	for _, b := range r.Branches {
		n += b.Descendants()
	}
	return n
}

func distinct(ls []store.SessionListing) (sources, models, cwds []string) {
	seen := map[string]bool{}
	add := func(list *[]string, kind, v string) {
		if v != "" && !seen[kind+v] {
			seen[kind+v] = true
			*list = append(*list, v)
		}
	}
	for _, l := range ls {
		add(&sources, "s", l.Source)
		add(&models, "m", l.Model)
		add(&cwds, "c", l.Cwd)
	}
	return
}

// liveByConversation maps conversation (lineage root) ids to the lease held on them now.
func (s *Server) liveByConversation(ctx context.Context) (map[string]store.HeldLease, error) {
	held, err := s.st.HeldLeases(ctx)
	if err != nil {
		return nil, fmt.Errorf("held leases: %w", err)
	}
	m := make(map[string]store.HeldLease, len(held))
	for _, h := range held {
		m[h.ConversationID] = h
	}
	return m, nil
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

func parseID(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errStatus(http.StatusBadRequest, "bad message id %q", shorten(s, 40))
	}
	return n, nil
}

// --- search ---

const searchPageSize = 20

type searchData struct {
	baseData
	Q, Role, Source string
	Hits            []store.SearchHit
	Titles          map[string]string // session id → title, for the hits' sessions
	Page            int
	Prev, Next      string
	Searched        bool
}

func (s *Server) searchPage(w http.ResponseWriter, r *http.Request, v viewer) error {
	q := r.URL.Query()
	d := searchData{baseData: s.base(r, v, "Search"), Q: strings.TrimSpace(q.Get("q")), Role: q.Get("role"), Source: q.Get("source")}
	d.Nav, d.Query = "search", d.Q
	d.Page = max(atoiOr(q.Get("page"), 1), 1)
	switch d.Role {
	case "", store.RoleUser, store.RoleAssistant, store.RoleTool:
	default:
		return errStatus(http.StatusBadRequest, "bad role %q: one of user, assistant, tool", shorten(d.Role, 20))
	}
	if d.Q != "" {
		d.Searched = true
		sq := store.SearchQuery{Text: d.Q, Limit: searchPageSize + 1, Offset: (d.Page - 1) * searchPageSize,
			UserID: v.userFilter(), NoContext: true}
		if d.Role != "" {
			sq.Roles = []string{d.Role}
		}
		if d.Source != "" {
			sq.Sources = []string{d.Source}
		}
		hits, err := s.st.Search(r.Context(), sq)
		if err != nil {
			return fmt.Errorf("search: %w", err)
		}
		more := len(hits) > searchPageSize
		if more {
			hits = hits[:searchPageSize]
		}
		// Hits in sub-agent sessions (delegations) rank below the others on the page.
		slices.SortStableFunc(hits, func(a, b store.SearchHit) int {
			return cmp.Compare(boolInt(a.Source == "subagent"), boolInt(b.Source == "subagent"))
		})
		d.Hits = hits
		d.Titles = map[string]string{}
		for _, h := range hits {
			if _, ok := d.Titles[h.SessionID]; ok {
				continue
			}
			sess, err := s.st.GetSession(r.Context(), h.SessionID)
			if err != nil {
				d.Titles[h.SessionID] = ""
				continue
			}
			d.Titles[h.SessionID] = sess.Title
		}
		link := func(page int) string {
			return s.opts.Prefix + "/search" + queryString("q", d.Q, "role", d.Role, "source", d.Source, "page", strconv.Itoa(page))
		}
		if d.Page > 1 {
			d.Prev = link(d.Page - 1)
		}
		if more {
			d.Next = link(d.Page + 1)
		}
	}
	return s.render(w, func(m *markup.Writer) { s.searchHTML(m, d) })
}

// --- system prompt ---

type promptData struct {
	baseData
	Session store.Session
	Prompt  string
}

func (s *Server) promptPage(w http.ResponseWriter, r *http.Request, v viewer) error {
	sess, err := s.visible(r.Context(), v, r.PathValue("id"))
	if err != nil {
		return err
	}
	p, err := s.st.SystemPrompt(r.Context(), sess.ID)
	if err != nil {
		return fmt.Errorf("system prompt of %s: %w", sess.ID, err)
	}
	d := promptData{baseData: s.base(r, v, "System prompt"), Session: sess, Prompt: p}
	return s.render(w, func(m *markup.Writer) { s.promptHTML(m, d) })
}

// --- usage ---

type usageData struct {
	baseData
	Days    []usageDay
	Models  []usageModel
	Total   store.Usage
	Chart   chart
	SinceTo string
}

type usageDay struct {
	Day   time.Time
	Usage store.Usage
}

type usageModel struct {
	Model string
	Usage store.Usage
}

const usageDays = 30

func (s *Server) usagePage(w http.ResponseWriter, r *http.Request, v viewer) error {
	now := s.opts.Now().UTC()
	since := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -(usageDays - 1))
	rows, err := s.st.UsageByDay(r.Context(), store.UsageQuery{UserID: v.userFilter(), Since: since})
	if err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	d := usageData{baseData: s.base(r, v, "Usage")}
	d.Nav = "usage"
	byDay := map[time.Time]store.Usage{}
	byModel := map[string]store.Usage{}
	var models []string
	for _, row := range rows {
		byDay[row.Day] = byDay[row.Day].Add(row.Usage)
		if _, ok := byModel[row.Model]; !ok {
			models = append(models, row.Model)
		}
		byModel[row.Model] = byModel[row.Model].Add(row.Usage)
		d.Total = d.Total.Add(row.Usage)
	}
	for i := 0; i < usageDays; i++ {
		day := since.AddDate(0, 0, i)
		d.Days = append(d.Days, usageDay{Day: day, Usage: byDay[day]})
	}
	for _, m := range models {
		d.Models = append(d.Models, usageModel{Model: m, Usage: byModel[m]})
	}
	d.Chart = usageChart(d.Days)
	d.SinceTo = since.Format("2006-01-02") + " – " + now.Format("2006-01-02") + " (UTC)"
	return s.render(w, func(m *markup.Writer) { s.usageHTML(m, d) })
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
