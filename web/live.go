package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/web/markup"
)

// events streams a session's new rows as server-sent events while the page is open:
//
//	event: messages   data: the rendered transcript items of rows newer than the last one sent
//	event: archived   data: ids of rows already on the page that a compaction just archived
//	                  (sent with the compaction's summary; from= names the page's first row)
//	event: lease      data: the live badge ("" when no turn is running)
//
// The source is the store itself, polled every Options.PollInterval: a row is sent once it is
// committed, whichever process wrote it. The stream ends with the request or Server.Close.
func (s *Server) events(w http.ResponseWriter, r *http.Request, v viewer) error {
	ctx := r.Context()
	sess, err := s.visible(ctx, v, r.PathValue("id"))
	if err != nil {
		return err
	}
	after, err := parseID(r.URL.Query().Get("after"))
	if err != nil {
		return err
	}
	from, err := parseID(r.URL.Query().Get("from"))
	if err != nil {
		return err
	}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil && n > after {
			after = n
		}
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		return errStatus(http.StatusInternalServerError, "streaming unsupported by this server")
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()

	lastBadge := "\x00" // nothing sent yet
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()
	idle := 0
	for {
		ms, err := s.st.ConversationPage(ctx, sess.ID, store.PageQuery{View: store.ViewDisplay, AfterID: after, Limit: transcriptPage})
		if err != nil {
			return nil // the session went away or the request ended: the stream simply ends
		}
		if len(ms) > 0 {
			html := s.messagesHTML(ms, v.csrf)
			shown := after
			after = ms[len(ms)-1].ID
			writeEvent(w, "messages", strconv.FormatInt(after, 10), string(html))
			idle = 0
			if from > 0 && compacts(ms) {
				ids, err := s.archivedBetween(ctx, sess.ID, from, shown)
				if err != nil {
					return nil
				}
				if len(ids) > 0 {
					writeEvent(w, "archived", "", strings.Join(ids, " "))
				}
			}
		}
		live, err := s.leaseOf(ctx, sess.ID)
		if err != nil {
			return nil
		}
		badge := ""
		if live != nil {
			var m markup.Writer
			s.badge(&m, live)
			badge = m.String()
		}
		if badge != lastBadge {
			writeEvent(w, "lease", "", badge)
			lastBadge = badge
			idle = 0
		}
		if idle++; idle*int(s.opts.PollInterval/time.Millisecond) >= 15000 {
			fmt.Fprint(w, ": keep-alive\n\n")
			idle = 0
		}
		flusher.Flush()
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return nil
		case <-tick.C:
		}
	}
}

// compacts reports whether ms holds the summary of a compaction that is in force.
func compacts(ms []store.Message) bool {
	for _, m := range ms {
		if m.Summary && m.Active {
			return true
		}
	}
	return false
}

// archivedBetween lists the ids of the rows from..upTo (what the page shows) that are archived
// by compaction now. The page holds at most a few transcript pages, so the walk is bounded.
func (s *Server) archivedBetween(ctx context.Context, sessionID string, from, upTo int64) ([]string, error) {
	var ids []string
	for cursor, pages := from-1, 0; cursor < upTo && pages < 4; pages++ {
		ms, err := s.st.ConversationPage(ctx, sessionID, store.PageQuery{View: store.ViewDisplay, AfterID: cursor, BeforeID: upTo + 1, Limit: transcriptPage})
		if err != nil || len(ms) == 0 {
			return ids, err
		}
		for _, m := range ms {
			if !m.Active && m.Compacted {
				ids = append(ids, strconv.FormatInt(m.ID, 10))
			}
		}
		cursor = ms[len(ms)-1].ID
	}
	return ids, nil
}

// writeEvent writes one server-sent event; data may span lines.
func writeEvent(w io.Writer, event, id, data string) {
	var b strings.Builder
	b.WriteString("event: " + event + "\n")
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	for _, line := range strings.Split(data, "\n") {
		b.WriteString("data: " + strings.TrimSuffix(line, "\r") + "\n")
	}
	b.WriteString("\n")
	_, _ = io.WriteString(w, b.String())
}
