package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gorilla/websocket"

	"github.com/spoolhq/spool/gateway/platform"
)

// envelope is one Socket Mode frame.
type envelope struct {
	Type         string          `json:"type"`
	EnvelopeID   string          `json:"envelope_id"`
	Payload      json.RawMessage `json:"payload"`
	RetryAttempt int             `json:"retry_attempt"`
	Reason       string          `json:"reason"`
}

// runSocket holds a Socket Mode connection until ctx ends, opening a new one after every
// disconnect (a "disconnect" frame, a closed socket) with a capped backoff.
func (a *Adapter) runSocket(ctx context.Context, h platform.Handler) error {
	backoff := time.Second
	for ctx.Err() == nil {
		hello, err := a.socketOnce(ctx, h)
		if ctx.Err() != nil {
			return nil
		}
		if hello {
			backoff = time.Second
		}
		a.count("socket_reconnect")
		if err != nil {
			a.count("socket_error")
		}
		if err := a.c.sleep(ctx, backoff); err != nil {
			return nil
		}
		backoff = min(2*backoff, 30*time.Second)
	}
	return nil
}

// socketOnce opens one connection and reads envelopes until it ends; hello reports whether the
// server greeted it (a healthy connection).
func (a *Adapter) socketOnce(ctx context.Context, h platform.Handler) (hello bool, err error) {
	url, err := a.c.OpenConnection(ctx)
	if err != nil {
		return false, err
	}
	d := websocket.Dialer{HandshakeTimeout: 15 * time.Second}
	conn, _, err := d.DialContext(ctx, url, nil)
	if err != nil {
		return false, fmt.Errorf("slack socket mode: dial: %w", err)
	}
	done := make(chan struct{})
	defer close(done)
	go func() { // the read below does not watch ctx: closing the connection ends it
		select {
		case <-ctx.Done():
		case <-done:
		}
		conn.Close()
	}()
	for {
		var env envelope
		if err := conn.ReadJSON(&env); err != nil {
			return hello, fmt.Errorf("slack socket mode: read: %w", err)
		}
		switch env.Type {
		case "hello":
			hello = true
		case "disconnect":
			return hello, nil
		case "events_api":
			in, ok, perr := parseCallback(env.Payload, a.botUser())
			if perr == nil && ok {
				in.Retry = env.RetryAttempt
				if err := a.deliver(h, in); err != nil {
					continue // no ack: Slack redelivers it
				}
			}
			if err := conn.WriteJSON(map[string]string{"envelope_id": env.EnvelopeID}); err != nil {
				return hello, fmt.Errorf("slack socket mode: ack: %w", err)
			}
		default:
			if env.EnvelopeID != "" { // slash commands, interactivity: acked, not handled here
				if err := conn.WriteJSON(map[string]string{"envelope_id": env.EnvelopeID}); err != nil {
					return hello, fmt.Errorf("slack socket mode: ack: %w", err)
				}
			}
		}
	}
}
