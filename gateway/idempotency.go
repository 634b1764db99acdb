package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/spoolhq/spool/store"
)

// staleClaim is how long a pending claim is honoured before its request is presumed dead.
const staleClaim = 15 * time.Minute

// HashBody identifies a request for idempotency: method, path and body.
func HashBody(method, path string, body []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s %s\n", method, path)
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Idem is a claimed Idempotency-Key: Replay holds a stored outcome to send instead of running;
// otherwise the caller runs the request and calls Complete (an outcome worth replaying) or
// Release (nothing happened: a retry should run again).
type Idem struct {
	g          *Gateway
	scope, key string
	Replay     *store.IdempotencyEntry
}

// Idempotent claims key for principal and a request hash. A key used with another body is an
// *IdempotencyConflictError; one whose first request still runs is a *BusyError.
func (g *Gateway) Idempotent(ctx context.Context, principal, key, hash string) (*Idem, error) {
	now := time.Now()
	start := now
	e, claimed, err := g.st.ClaimIdempotencyKey(ctx, store.IdempotencyClaim{
		Entry:        store.IdempotencyEntry{Scope: principal, Key: key, RequestHash: hash, CreatedAt: now},
		ExpireBefore: now.Add(-g.cfg.IdempotencyTTL), StaleBefore: now.Add(-staleClaim),
	})
	g.m.storeLatency.WithLabelValues("claim_idempotency_key").Observe(time.Since(start).Seconds())
	if err != nil {
		return nil, err
	}
	id := &Idem{g: g, scope: principal, key: key}
	switch {
	case claimed:
		return id, nil
	case e.RequestHash != hash:
		return nil, &IdempotencyConflictError{Key: key}
	case e.Status == 0:
		return nil, &BusyError{SessionID: "(request with Idempotency-Key " + key + ")", RetryAfter: g.cfg.RetryAfter}
	}
	g.m.replays.Inc()
	id.Replay = &e
	return id, nil
}

// Complete records the outcome to replay.
func (i *Idem) Complete(ctx context.Context, status int, body []byte) error {
	return i.g.st.CompleteIdempotencyKey(context.WithoutCancel(ctx), i.scope, i.key, status, body)
}

// Release gives the key up: the request did nothing.
func (i *Idem) Release(ctx context.Context) error {
	return i.g.st.ReleaseIdempotencyKey(context.WithoutCancel(ctx), i.scope, i.key)
}
