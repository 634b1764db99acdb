package compress

import "github.com/spoolhq/spool/store"

// Estimator gives a rough token count for one message. The default is CharEstimator; a
// calibrated estimator (package tokens) can be plugged in.
type Estimator interface {
	Message(m store.Message) int
}

// CharEstimator is the rough estimate Hermes Agent uses: content characters / 4, plus 10 per message,
// plus the tool-call envelope and replayed reasoning at their length / 4.
type CharEstimator struct{}

// toolCallEnvelope approximates the JSON punctuation and keys around one tool call
// ({"id":"","type":"function","function":{"name":"","arguments":""}}).
const toolCallEnvelope = 60

// Message implements Estimator.
func (CharEstimator) Message(m store.Message) int {
	content := m.Content
	if m.APIContent != "" {
		content = m.APIContent
	}
	n := len(content)/4 + 10
	if len(m.ToolCalls) > 0 {
		chars := 2
		for _, tc := range m.ToolCalls {
			chars += toolCallEnvelope + len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments)
		}
		n += chars / 4
	}
	n += (len(m.Reasoning) + len(m.ReasoningDetails)) / 4
	return n
}

// EstimateTokens sums e over ms; a nil e means CharEstimator.
func EstimateTokens(e Estimator, ms []store.Message) int {
	if e == nil {
		e = CharEstimator{}
	}
	total := 0
	for _, m := range ms {
		total += e.Message(m)
	}
	return total
}
