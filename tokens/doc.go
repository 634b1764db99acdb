// Package tokens estimates prompt sizes without a tokenizer and calibrates the estimate with the
// provider's real usage.
//
// The rough estimate is the reference's: content characters / 4, plus 10 per message, plus the
// serialized tool-call envelope / 4, plus replayed reasoning fields / 4. A Calibrated tracker
// anchors on the last real prompt token count and adds the rough estimate of only what was
// appended since, so the error stays small however long the session gets.
package tokens
