package slackfake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gorilla/websocket"
)

// sign is Slack's v0 request signature, written here from the documentation (not shared
// with the adapter, so a mistake in one does not hide in both).
func sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "v0:%s:%s", ts, body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// socket serves a Socket Mode connection: hello, then every unacked envelope, then acks.
func (s *Server) socket(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("ticket") == "" {
		http.Error(w, "no ticket", http.StatusUnauthorized)
		return
	}
	c, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.conns[c] = true
	err = c.WriteJSON(map[string]any{"type": "hello", "num_connections": len(s.conns),
		"debug_info":      map[string]any{"host": "fake", "approximate_connection_time": 3600},
		"connection_info": map[string]any{"app_id": "A0FAKE"}})
	for _, p := range s.pending { // what an earlier connection did not ack comes again
		if err == nil {
			p.retry++
			err = s.sendEnv(c, p)
		}
	}
	s.notify()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.notify()
		s.mu.Unlock()
		c.Close()
	}()
	if err != nil {
		return
	}
	for {
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if err := c.ReadJSON(&ack); err != nil {
			return
		}
		s.mu.Lock()
		for i, p := range s.pending {
			if p.id == ack.EnvelopeID {
				s.pending = append(s.pending[:i], s.pending[i+1:]...)
				s.acked++
				break
			}
		}
		s.notify()
		s.mu.Unlock()
	}
}

func (s *Server) sendEnv(c *websocket.Conn, p *pendingEnv) error { // with s.mu held
	p.sentTo = c
	return c.WriteJSON(map[string]any{"envelope_id": p.id, "type": "events_api", "payload": p.payload,
		"accepts_response_payload": false, "retry_attempt": p.retry, "retry_reason": reason(p.retry)})
}

func reason(retry int) string {
	if retry == 0 {
		return ""
	}
	return "timeout"
}

// Push sends an event_callback body over Socket Mode: to an open connection now, or to the
// next one. It stays pending (and is redelivered to every new connection) until acked.
func (s *Server) Push(body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.envN++
	p := &pendingEnv{id: fmt.Sprintf("env-%06d", s.envN), payload: json.RawMessage(body)}
	s.pending = append(s.pending, p)
	for c := range s.conns {
		_ = s.sendEnv(c, p)
		break
	}
	s.notify()
}

// Disconnect asks every Socket Mode client to reconnect (a "disconnect" frame, as Slack sends
// before it refreshes a connection) and closes the connections.
func (s *Server) Disconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.WriteJSON(map[string]any{"type": "disconnect", "reason": "refresh_requested",
			"debug_info": map[string]any{"host": "fake"}})
		c.Close()
	}
}
