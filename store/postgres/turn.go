package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/internal/sqlq"
)

// releaseNotifySQL gives the lease up when it is still l's and then notifies its waiters (the
// notification is delivered at commit, so a waiter never wakes before the release is visible).
const releaseNotifySQL = `WITH r AS (UPDATE turn_leases SET holder = NULL, expires_at = NULL
	WHERE conversation_id = $1 AND holder = $2 AND generation = $3 RETURNING conversation_id)
	SELECT pg_notify($4, $5) FROM r`

// CommitTurn implements store.Leaser in one round trip: the messages' statements as
// AppendBatch pipelines them, the request records, the patch and the release, all in one
// pipelined batch, which PostgreSQL runs as one implicit transaction. The first statement always
// locks the session's row and spool_fence then locks the lease row (the order of every other
// fenced write, so no two of them deadlock), and a failed fence aborts the whole batch.
func (db *DB) CommitTurn(ctx context.Context, sessionID string, l store.Lease, w store.TurnWrite) ([]int64, error) {
	if w.Empty() {
		if !w.Release {
			return nil, nil
		}
		return nil, db.ReleaseLease(ctx, l)
	}
	var enc []encodedMessage
	var toolCalls int
	var err error
	if len(w.Messages) > 0 {
		if enc, toolCalls, err = encodeMessages(w.Messages); err != nil {
			return nil, fmt.Errorf("commit turn on %s: %w", sessionID, err)
		}
	}
	recs := make([]sqlq.EncodedRequest, len(w.Requests))
	for i, r := range w.Requests {
		if recs[i], err = sqlq.EncodeRequest(db.Dialect(), sessionID, r); err != nil {
			return nil, fmt.Errorf("commit turn on %s: request %d: %w", sessionID, i, err)
		}
	}
	var sets []string
	var args []any
	if w.Patch != nil {
		if sets, args, err = patchSets(*w.Patch); err != nil {
			return nil, fmt.Errorf("commit turn on %s: %w", sessionID, err)
		}
	}
	lease := store.WriteOptions{Fence: store.FenceOf(&l)}
	b := &pgx.Batch{}
	// Each queued statement has its reader, in order.
	var reads []func(br pgx.BatchResults) error
	exec := func(err func(error) error) func(br pgx.BatchResults) error {
		return func(br pgx.BatchResults) error {
			if _, e := br.Exec(); e != nil {
				return err(e)
			}
			return nil
		}
	}
	same := func(e error) error { return e }
	fenced := false
	fence := func(allowClosed bool) {
		if fenced {
			return
		}
		fenced = true
		queueFence(b, sessionID, store.WriteOptions{Fence: store.FenceOf(&l), AllowClosed: allowClosed})
		reads = append(reads, exec(func(e error) error { return fenceErr(e, sessionID, lease) }))
	}
	locked := func(br pgx.BatchResults) error {
		var root string
		if err := br.QueryRow().Scan(&root); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound("session", sessionID)
			}
			return err
		}
		return nil
	}
	var ids []int64
	if len(enc) > 0 {
		last := micros(enc[len(enc)-1].m.Timestamp)
		b.Queue(bumpSessionSQL, len(enc), toolCalls, last, firstUserText(enc), sessionID)
		reads = append(reads, func(br pgx.BatchResults) error {
			var root string
			var closed bool
			if err := br.QueryRow().Scan(&root, &closed); err != nil {
				if errors.Is(err, pgx.ErrNoRows) {
					return notFound("session", sessionID)
				}
				return err
			}
			return nil
		})
		fence(false)
		b.Queue(bumpRootSQL, sessionID, last)
		reads = append(reads, exec(same))
		for _, e := range enc {
			b.Queue(insertMessageSQL, insertArgs(sessionID, e, true, false)...)
			reads = append(reads, func(br pgx.BatchResults) error {
				var id int64
				if err := br.QueryRow().Scan(&id); err != nil {
					return err
				}
				ids = append(ids, id)
				return nil
			})
		}
	}
	for i := range recs {
		rec := &recs[i]
		b.Queue(usageAddSQL, rec.UsageArgs()...)
		reads = append(reads, locked)
		fence(true) // RecordRequest does not refuse a rotated session; neither does this
		b.Queue(requestAddSQL, rec.RowArgs()...)
		reads = append(reads, exec(same))
	}
	if len(sets) > 0 {
		b.Queue(fmt.Sprintf("UPDATE sessions SET %s WHERE id = $%d RETURNING root_id", strings.Join(sets, ", "), len(args)+1),
			append(args, sessionID)...)
		reads = append(reads, locked)
	}
	fence(true) // a patch with no fields is still fenced
	if w.Release {
		b.Queue(releaseNotifySQL, l.ConversationID, l.Holder, l.Generation, leaseChannel, notifyPayload(l.ConversationID))
		reads = append(reads, func(br pgx.BatchResults) error {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			rows.Close() // no row: the lease was no longer l's, which a release forgives
			return rows.Err()
		})
	}
	err = db.batch(ctx, db.opts.WriteBudget, b, func(br pgx.BatchResults) error {
		ids = ids[:0]
		for _, read := range reads {
			if err := read(br); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("commit turn on %s: %w", sessionID, err)
	}
	return ids, nil
}
