package agent

import (
	"errors"
	"fmt"
)

// Errors callers branch on with errors.Is.
var (
	// ErrEmptyInput: the user message is blank.
	ErrEmptyInput = errors.New("empty input")
	// ErrInputTooLarge: the user message alone would take more than half the model's window.
	ErrInputTooLarge = errors.New("input too large")
	// ErrIterationLimit: the model kept calling tools for Config.MaxIterations calls.
	ErrIterationLimit = errors.New("tool-call iteration limit reached")
	// ErrContextFull: the conversation overflows the model's window and cannot be compacted now.
	ErrContextFull = errors.New("conversation exceeds the model's context window")
)

// InputTooLargeError says how large the input is and what fits.
type InputTooLargeError struct {
	Bytes     int
	Tokens    int // estimated
	MaxTokens int
	Model     string
}

func (e *InputTooLargeError) Error() string {
	return fmt.Sprintf("input is %s (~%d tokens), more than half of %s's %d-token context window; nothing was sent or stored — save it to a file and ask for it to be read in parts",
		humanBytes(e.Bytes), e.Tokens, modelName(e.Model), 2*e.MaxTokens)
}

// Is makes errors.Is(err, ErrInputTooLarge) true.
func (e *InputTooLargeError) Is(target error) bool { return target == ErrInputTooLarge }

func humanBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func modelName(m string) string {
	if m == "" {
		return "the model"
	}
	return m
}
