package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/spoolhq/spool/store"
)

// ImportSession implements store.Admin.
func (db *DB) ImportSession(ctx context.Context, s store.Session, prompt string, ms []store.Message) error {
	err := db.write(ctx, db.opts.WriteBudget, func(tx *sql.Tx) error {
		if err := db.importTx(ctx, tx, s, prompt, ms); err != nil {
			return err
		}
		return db.noteBulk(ctx, tx, len(ms))
	})
	if err != nil {
		return fmt.Errorf("import session %s: %w", s.ID, err)
	}
	return nil
}

// ImportBundle implements store.BundleImporter: every session fill puts lands in one
// transaction, or none does.
func (db *DB) ImportBundle(ctx context.Context, fill func(put store.PutSession) error) error {
	return db.write(ctx, db.opts.WriteBudget, func(tx *sql.Tx) error {
		err := fill(func(s store.Session, prompt string, ms []store.Message) error {
			return db.importTx(ctx, tx, s, prompt, ms) // Import names the session
		})
		if err != nil {
			return err
		}
		return db.indexNow(ctx, tx)
	})
}

// importTx inserts one exported session inside tx; an existing id returns ErrExists before
// anything is written.
func (db *DB) importTx(ctx context.Context, tx *sql.Tx, s store.Session, prompt string, ms []store.Message) error {
	ns := store.NewSession{ID: s.ID, Source: s.Source, UserID: s.UserID, SessionKey: s.SessionKey, Title: s.Title,
		Model: s.Model, ModelConfig: s.ModelConfig, ParentID: s.ParentID, Relation: s.Relation,
		StartedAt: s.StartedAt, Cwd: s.Cwd, GitBranch: s.GitBranch}
	if ns.Source == "" {
		ns.Source = "cli"
	}
	if ns.StartedAt.IsZero() {
		return store.Invalid("started_at", "missing")
	}
	if err := store.ValidateNewSession(&ns); err != nil {
		return err
	}
	enc, _, err := encodeMessages(ms)
	if err != nil {
		return err
	}
	if existsOr(ctx, tx, ns.ID) == nil {
		return fmt.Errorf("session %s: %w", ns.ID, store.ErrExists)
	}
	if ns.ParentID != "" && existsOr(ctx, tx, ns.ParentID) != nil {
		ns.ParentID, ns.Relation = "", store.RelationNone // the parent was not imported
	}
	if ns.Title != "" {
		t, err := freeTitle(ctx, tx, ns.UserID, ns.Title)
		if err != nil {
			return err
		}
		ns.Title = t
	}
	if err := createSessionTx(ctx, tx, ns); err != nil {
		return err
	}
	u := s.Usage
	if _, err := tx.ExecContext(ctx, `UPDATE sessions SET ended_at = ?, end_reason = ?, input_tokens = ?,
		output_tokens = ?, cache_read_tokens = ?, cache_write_tokens = ?, reasoning_tokens = ?,
		api_call_count = ?, cost_usd = ? WHERE id = ?`,
		nullMicros(s.EndedAt), s.EndReason, u.InputTokens, u.OutputTokens, u.CacheReadTokens,
		u.CacheWriteTokens, u.ReasoningTokens, u.APICalls, u.CostUSD, ns.ID); err != nil {
		return err
	}
	if prompt != "" {
		p := store.CleanText(prompt)
		if err := setPromptTx(ctx, tx, ns.ID, p, store.PromptHash(p)); err != nil {
			return err
		}
	}
	if err := db.insertMessages(ctx, tx, ns.ID, enc); err != nil {
		return err
	}
	// A bundle carries no copy links: infer them, as for rows stored before schema 6. Only an
	// archived row can be a copy's source, so a session without one has nothing to link.
	if hasArchived(enc) {
		if err := linkStoredCopies(ctx, tx, ns.ID); err != nil {
			return err
		}
	}
	if err := recount(ctx, tx, ns.ID); err != nil {
		return err
	}
	// Whichever of a chain's sessions is imported first, its root ends with the newest activity,
	// as appends keep it (bumpSession), so a migrated chain lists at its tip's activity.
	return bumpRoot(ctx, tx, ns.ID)
}

// hasArchived reports whether enc holds an archived row (compacted out of the active view).
func hasArchived(enc []encodedMessage) bool {
	for _, e := range enc {
		if !e.m.Active && e.m.Compacted {
			return true
		}
	}
	return false
}
