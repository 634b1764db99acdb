// Package tokens estimates prompt sizes without a tokenizer.
//
// The rough estimate is Hermes Agent's: content characters / 4, plus 10 per message, plus the
// serialized tool-call envelope / 4, plus replayed reasoning fields / 4. Calibration with the
// provider's real usage lives with its owner: compress.State's anchor (the last real prompt count
// plus the rough estimate of what was appended since), which the agent persists on the session.
package tokens
