package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/web/markup"
)

// Actions: each one makes the store call the CLI makes for it (spool sessions rename / delete /
// export, /branch in chat).

func (s *Server) rename(w http.ResponseWriter, r *http.Request, v viewer) error {
	sess, err := s.visible(r.Context(), v, r.PathValue("id"))
	if err != nil {
		return err
	}
	title := strings.TrimSpace(r.PostFormValue("title"))
	if err := s.st.SetTitle(r.Context(), sess.ID, title); err != nil {
		var inUse *store.TitleInUseError
		var inv *store.InvalidError
		switch {
		case errors.As(err, &inUse):
			if other, gerr := s.st.GetSession(r.Context(), inUse.SessionID); gerr == nil && !v.sees(other) {
				return errStatus(http.StatusConflict, "title %q is already in use", title)
			}
			return errStatus(http.StatusConflict, "%s", inUse.Error())
		case errors.As(err, &inv):
			return errStatus(http.StatusBadRequest, "bad title %q: %s", title, inv.Reason)
		}
		return fmt.Errorf("rename %s: %w", sess.ID, err)
	}
	http.Redirect(w, r, s.opts.Prefix+"/sessions/"+sess.ID, http.StatusSeeOther)
	return nil
}

type deleteData struct {
	baseData
	Session  store.Session
	Children []store.Session
	Live     *store.HeldLease
}

func (s *Server) deleteConfirmPage(w http.ResponseWriter, r *http.Request, v viewer) error {
	sess, err := s.visible(r.Context(), v, r.PathValue("id"))
	if err != nil {
		return err
	}
	kids, err := s.st.Children(r.Context(), sess.ID)
	if err != nil {
		return fmt.Errorf("children of %s: %w", sess.ID, err)
	}
	live, err := s.leaseOf(r.Context(), sess.ID)
	if err != nil {
		return err
	}
	d := deleteData{baseData: s.base(r, v, "Delete "+titleOf(sess)), Session: sess, Children: kids, Live: live}
	return s.render(w, func(m *markup.Writer) { s.deleteHTML(m, d) })
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request, v viewer) error {
	ctx := r.Context()
	sess, err := s.visible(ctx, v, r.PathValue("id"))
	if err != nil {
		return err
	}
	if r.PostFormValue("confirm") != sess.ID {
		return errStatus(http.StatusBadRequest, "not deleted: confirm by submitting the session id")
	}
	// The store refuses under a running turn's lease, in the same transaction as the delete.
	var held *store.LeaseHeldError
	if err := s.st.DeleteSession(ctx, sess.ID); errors.As(err, &held) {
		return errStatus(http.StatusConflict, "not deleted: a turn is running (lease held by %s)", held.Holder)
	} else if err != nil {
		return fmt.Errorf("delete %s: %w", sess.ID, err)
	}
	http.Redirect(w, r, s.opts.Prefix+"/", http.StatusSeeOther)
	return nil
}

func (s *Server) export(w http.ResponseWriter, r *http.Request, v viewer) error {
	ctx := r.Context()
	sess, err := s.visible(ctx, v, r.PathValue("id"))
	if err != nil {
		return err
	}
	tree := r.PostFormValue("tree") == "1"
	// Buffered: a failure half way must not send half a bundle as a download.
	var buf bytes.Buffer
	if err := store.Export(ctx, scopedSource{Store: s.st, v: v}, &buf, []string{sess.ID}, tree, nil); err != nil {
		return fmt.Errorf("export %s: %w", sess.ID, err)
	}
	name := sess.ID
	if tree {
		name += "-tree"
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="spool-`+name+`.jsonl"`)
	_, err = w.Write(buf.Bytes())
	return err
}

// scopedSource hides sessions the viewer may not see from an export of a tree.
type scopedSource struct {
	Store
	v viewer
}

func (c scopedSource) GetSession(ctx context.Context, id string) (store.Session, error) {
	s, err := c.Store.GetSession(ctx, id)
	if err == nil && !c.v.sees(s) {
		return store.Session{}, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	return s, err
}

func (c scopedSource) Children(ctx context.Context, id string) ([]store.Session, error) {
	kids, err := c.Store.Children(ctx, id)
	if err != nil {
		return nil, err
	}
	out := kids[:0]
	for _, k := range kids {
		if c.v.sees(k) {
			out = append(out, k)
		}
	}
	return out, nil
}

func (c scopedSource) ListSessions(ctx context.Context, o store.ListOptions) ([]store.SessionListing, error) {
	o.UserID = c.v.userFilter()
	return c.Store.ListSessions(ctx, o)
}

// branch copies the session's active history up to a chosen message into a new branch: the
// whole of it through Branch (one transaction, as /branch in chat), a prefix through
// CreateSession and AppendBatch (the calls an import makes), removed again if the copy fails.
func (s *Server) branch(w http.ResponseWriter, r *http.Request, v viewer) error {
	ctx := r.Context()
	sess, err := s.visible(ctx, v, r.PathValue("id"))
	if err != nil {
		return err
	}
	at, err := parseID(r.PostFormValue("at"))
	if err != nil {
		return err
	}
	title := strings.TrimSpace(r.PostFormValue("title"))
	if title != "" {
		if title, err = store.CleanTitle(title); err != nil {
			return errStatus(http.StatusBadRequest, "bad title: %v", err)
		}
	}
	active, err := s.st.Conversation(ctx, sess.ID, store.ViewActive)
	if err != nil {
		return fmt.Errorf("load %s: %w", sess.ID, err)
	}
	cut := len(active)
	if at > 0 {
		cut = -1
		for i, m := range active {
			if m.ID == at {
				cut = i + 1
			}
		}
		if cut < 0 {
			return errStatus(http.StatusBadRequest, "message %d is not in the active history of %s: branch from a message the model still sees", at, sess.ID)
		}
	}
	child := store.NewSession{Title: title, Source: sess.Source, UserID: sess.UserID, Model: sess.Model,
		ModelConfig: sess.ModelConfig, Cwd: sess.Cwd, GitBranch: sess.GitBranch}
	var made store.Session
	if cut == len(active) {
		if made, err = s.st.Branch(ctx, sess.ID, child); err != nil {
			return branchError(sess.ID, err)
		}
	} else {
		// The branch, its frozen prompt and its copy of the history up to the message are
		// stored in one transaction: a failure leaves no half-made branch.
		child.ParentID, child.Relation = sess.ID, store.RelationBranch
		if child.SystemPrompt, err = s.st.SystemPrompt(ctx, sess.ID); err != nil {
			return branchError(sess.ID, err)
		}
		for _, m := range active[:cut] {
			m.ID, m.SessionID, m.Active, m.Compacted = 0, "", true, false
			child.Messages = append(child.Messages, m)
		}
		if made, err = s.st.CreateSession(ctx, child); err != nil {
			return branchError(sess.ID, err)
		}
	}
	http.Redirect(w, r, s.opts.Prefix+"/sessions/"+made.ID, http.StatusSeeOther)
	return nil
}

func branchError(id string, err error) error {
	var inUse *store.TitleInUseError
	if errors.As(err, &inUse) {
		return errStatus(http.StatusConflict, "branch %s: title %q is already in use", id, inUse.Title)
	}
	return fmt.Errorf("branch %s: %w", id, err)
}
