package fake

import (
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/provider"
)

// FaultKind names an injectable failure. The error kinds carry the provider.Class they must be
// classified as; FaultCut and FaultSlow are transport behaviours.
type FaultKind string

// Fault kinds.
const (
	FaultAuth          FaultKind = "auth"            // 401
	FaultQuota         FaultKind = "quota"           // OpenAI 429 insufficient_quota; Anthropic 400 credit balance
	FaultRateLimit     FaultKind = "rate_limit"      // 429 with retry-after
	FaultOverloaded    FaultKind = "overloaded"      // Anthropic 529, OpenAI 503
	FaultContextLength FaultKind = "context_length"  // 400 prompt too long
	FaultBadRequest    FaultKind = "bad_request"     // 400 invalid request
	FaultServer        FaultKind = "server"          // 500
	FaultModelNotFound FaultKind = "model_not_found" // 404: the endpoint does not serve the model
	FaultCut           FaultKind = "cut"             // connection closed mid-response
	FaultSlow          FaultKind = "slow"            // answer normally after Delay
)

var faultKinds = []FaultKind{FaultAuth, FaultQuota, FaultRateLimit, FaultOverloaded,
	FaultContextLength, FaultBadRequest, FaultServer, FaultModelNotFound, FaultCut, FaultSlow}

// Fault is one injected failure. Delay is used by FaultSlow only.
type Fault struct {
	Kind  FaultKind
	Delay time.Duration
}

func (f Fault) String() string {
	if f.Kind == FaultSlow {
		return fmt.Sprintf("slow %s", f.Delay)
	}
	return string(f.Kind)
}

// Class is the provider.Class a correct client assigns to this fault.
func (f Fault) Class() provider.Class {
	switch f.Kind {
	case FaultAuth:
		return provider.ClassAuth
	case FaultQuota:
		return provider.ClassQuota
	case FaultRateLimit:
		return provider.ClassRateLimit
	case FaultOverloaded:
		return provider.ClassOverloaded
	case FaultContextLength:
		return provider.ClassContextLength
	case FaultBadRequest:
		return provider.ClassBadRequest
	case FaultServer:
		return provider.ClassServer
	case FaultModelNotFound:
		return provider.ClassModelNotFound
	case FaultCut:
		return provider.ClassNetwork
	case FaultSlow:
		return provider.ClassTimeout
	}
	return provider.ClassUnknown
}

// ParseFault reads "rate_limit", "slow 2s", "slow:2s" or an alias ("network" for cut, "timeout"
// for slow).
func ParseFault(s string) (Fault, error) {
	fields := strings.FieldsFunc(strings.TrimSpace(s), func(r rune) bool { return r == ' ' || r == ':' || r == '\t' })
	if len(fields) == 0 {
		return Fault{}, fmt.Errorf("empty fault")
	}
	kind := FaultKind(strings.ToLower(fields[0]))
	switch kind {
	case "network":
		kind = FaultCut
	case "timeout":
		kind = FaultSlow
	}
	known := false
	for _, k := range faultKinds {
		known = known || k == kind
	}
	if !known {
		return Fault{}, fmt.Errorf("unknown fault %q (want one of %s)", fields[0], faultNames())
	}
	f := Fault{Kind: kind}
	if kind == FaultSlow {
		f.Delay = 2 * time.Second
		if len(fields) > 1 {
			d, err := time.ParseDuration(fields[1])
			if err != nil || d < 0 {
				return Fault{}, fmt.Errorf("fault %q: bad delay %q", s, fields[1])
			}
			f.Delay = d
		}
	} else if len(fields) > 1 {
		return Fault{}, fmt.Errorf("fault %q takes no argument", s)
	}
	return f, nil
}

func faultNames() string {
	names := make([]string, len(faultKinds))
	for i, k := range faultKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// wireError is a fault rendered for one wire format.
type wireError struct {
	status     int
	body       []byte
	retryAfter string // seconds, when the provider sends retry-after
	message    string
}

// openAIError renders the body OpenAI sends for the fault: a 4-space indented JSON object with a
// trailing newline (see fixtures openai/05*).
func openAIError(kind FaultKind, model, apiKey string, promptTokens, window int) wireError {
	type errBody struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	str := func(s string) *string { return &s }
	var (
		status int
		e      errBody
		retry  string
	)
	switch kind {
	case FaultAuth:
		status = 401
		e = errBody{"Incorrect API key provided: " + maskKey(apiKey) + ". You can find your API key at https://platform.openai.com/account/api-keys.",
			"invalid_request_error", nil, str("invalid_api_key")}
	case FaultQuota:
		status = 429
		e = errBody{"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
			"insufficient_quota", nil, str("insufficient_quota")}
	case FaultRateLimit:
		status, retry = 429, "1"
		e = errBody{"Rate limit reached for " + model + " in organization org-fake on tokens per min (TPM): Limit 200000, Used 195869, Requested 4412. Please try again in 84ms. Visit https://platform.openai.com/account/rate-limits to learn more.",
			"tokens", nil, str("rate_limit_exceeded")}
	case FaultOverloaded:
		status = 503
		e = errBody{"The server is overloaded or not ready yet.", "server_error", nil, nil}
	case FaultContextLength:
		status = 400
		if promptTokens <= window {
			promptTokens = window + 1
		}
		e = errBody{fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", window, promptTokens),
			"invalid_request_error", str("messages"), str("context_length_exceeded")}
	case FaultModelNotFound:
		status = 404
		e = errBody{"The model `" + model + "` does not exist or you do not have access to it.",
			"invalid_request_error", nil, str("model_not_found")}
	case FaultBadRequest:
		status = 400
		e = errBody{"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
			"invalid_request_error", str("max_tokens"), str("unsupported_parameter")}
	default: // FaultServer
		status = 500
		e = errBody{"The server had an error while processing your request. Sorry about that!", "server_error", nil, nil}
	}
	return wireError{status: status, body: indentJSON(map[string]any{"error": e}, "    "), retryAfter: retry, message: e.Message}
}

// openAIInvalid renders a 400 invalid_request_error for a request the fake refuses.
func openAIInvalid(msg, param string) wireError {
	var p *string
	if param != "" {
		p = &param
	}
	body := indentJSON(map[string]any{"error": struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}{msg, "invalid_request_error", p, nil}}, "    ")
	return wireError{status: 400, body: body, message: msg}
}

// anthropicError renders the compact body Anthropic sends (fixtures anthropic/09*).
func anthropicError(kind FaultKind, model, requestID string, promptTokens, window int) wireError {
	var (
		status       int
		typ, message string
		retry        string
	)
	switch kind {
	case FaultAuth:
		status, typ, message = 401, "authentication_error", "invalid x-api-key"
	case FaultQuota:
		// Anthropic has no quota status: an exhausted balance is a 400 with this wording.
		status, typ, message = 400, "invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."
	case FaultRateLimit:
		status, typ, message, retry = 429, "rate_limit_error", "This request would exceed your account's rate limit. Please try again later.", "1"
	case FaultOverloaded:
		status, typ, message = 529, "overloaded_error", "Overloaded"
	case FaultContextLength:
		if promptTokens <= window {
			promptTokens = window + 1
		}
		status, typ, message = 400, "invalid_request_error", fmt.Sprintf("prompt is too long: %d tokens > %d maximum", promptTokens, window)
	case FaultModelNotFound:
		status, typ, message = 404, "not_found_error", "model: "+model
	case FaultBadRequest:
		status, typ, message = 400, "invalid_request_error", "messages.0.content: Input should be a valid list"
	default:
		status, typ, message = 500, "api_error", "Internal server error"
	}
	w := anthropicInvalidStatus(status, typ, message, requestID)
	w.retryAfter = retry
	return w
}

func anthropicInvalidStatus(status int, typ, message, requestID string) wireError {
	body := compactJSON(struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}{Type: "error", Error: struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}{typ, message}, RequestID: requestID})
	return wireError{status: status, body: body, message: message}
}

func maskKey(k string) string {
	if len(k) <= 8 {
		return "sk-XXX"
	}
	return k[:3] + strings.Repeat("*", 4) + k[len(k)-4:]
}

// providerError is the in-process form of a fault: what a correct adapter would have returned.
func providerError(f Fault, status int, message string) *provider.Error {
	return &provider.Error{Class: f.Class(), Provider: "fake", StatusCode: status, Message: message}
}
