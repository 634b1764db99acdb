package agent

import (
	"encoding/json"
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
