package agent

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spoolhq/spool/store"
)

// Keys of a session's model_config that record how the session runs, so a later command (a
// resume, spool compact) runs it the same way.
const (
	// SettingModel is the model a switch in the chat (/model) chose for the session.
	SettingModel = "model"
	// SettingContextLength is the context window, in tokens, the session runs with.
	SettingContextLength = "context_length"
)

// SessionSettings reads what s's model_config records of how it runs: the model a switch chose
// ("": none) and the context window (0: not recorded).
func SessionSettings(s store.Session) (model string, window int) {
	var m struct {
		Model  string `json:"model"`
		Window int    `json:"context_length"`
	}
	if len(s.ModelConfig) > 0 && json.Unmarshal(s.ModelConfig, &m) == nil {
		return m.Model, max(m.Window, 0)
	}
	return "", 0
}

// WithSettings returns cfg (a model_config object, or nil) with model (when not "") and window
// (when positive) recorded, every other key kept.
func WithSettings(cfg json.RawMessage, model string, window int) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(cfg) > 0 {
		if err := json.Unmarshal(cfg, &m); err != nil {
			return nil, fmt.Errorf("read model_config: %w", err)
		}
	}
	if model != "" {
		m[SettingModel], _ = json.Marshal(model)
	}
	if window > 0 {
		m[SettingContextLength], _ = json.Marshal(window)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("write model_config: %w", err)
	}
	return out, nil
}

// WithModel returns an agent like a (same provider, tools, fallbacks and store) that calls
// model with a window of window tokens (DefaultContextLength when zero). It keeps what a
// remembers of each session's last call, so the first call on the new model records its cache
// break as a model switch (layer and reason "model"). A session's stored system prompt is
// never rebuilt, so its stable tier stays byte-identical across the switch.
func (a *Agent) WithModel(model string, window int) (*Agent, error) {
	if model == "" {
		return nil, errors.New("agent: switch to which model? (empty name)")
	}
	d := a.deps
	d.Config.Model, d.Config.ContextLength = model, window
	n, err := New(d)
	if err != nil {
		return nil, fmt.Errorf("switch to model %s: %w", model, err)
	}
	n.depth, n.allowDelegate = a.depth, a.allowDelegate
	a.mu.Lock()
	for sid, m := range a.memos {
		n.memos[sid] = m
	}
	a.mu.Unlock()
	return n, nil
}
