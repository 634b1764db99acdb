package platform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// SendKey names the send-ledger entry a Send is for. The Router puts it in the context of
// every Outbound.Send, so an adapter can make a send idempotent on its platform: the same key
// is sent again only when an earlier attempt's outcome was never recorded (a crash or a
// timeout between send and ack), and then Unsure is set. Discord's adapter derives its
// enforce_nonce from Nonce; Slack's puts Nonce in the message metadata and, when Unsure, looks
// for a message carrying it before it posts.
type SendKey struct {
	Turn   string // the ledger's turn id
	Chunk  int    // the chunk (-1: a notice)
	Unsure bool   // an earlier attempt may have reached the platform
	// Noticed: the event's user was told it was queued (its notice, chunk -1, went before
	// the turn began), so this reply is not the first thing they see about it. An adapter
	// short of a chat's allowance may let a reply to a message that found its chat idle go
	// first (Slack's pacer does).
	Noticed bool
}

// Nonce is a short, stable token of the key (hex, 24 characters: within Discord's 25).
func (k SendKey) Nonce() string {
	sum := sha256.Sum256([]byte(k.Turn + "\x00" + strconv.Itoa(k.Chunk)))
	return hex.EncodeToString(sum[:12])
}

type sendKeyCtx struct{}

// WithSendKey returns ctx carrying k.
func WithSendKey(ctx context.Context, k SendKey) context.Context {
	return context.WithValue(ctx, sendKeyCtx{}, k)
}

// SendKeyFrom returns the key ctx carries, if any (a Send outside the Router has none).
func SendKeyFrom(ctx context.Context) (SendKey, bool) {
	k, ok := ctx.Value(sendKeyCtx{}).(SendKey)
	return k, ok
}
