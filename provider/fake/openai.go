package fake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
)

type oaRequest struct {
	Model    string      `json:"model"`
	Messages []oaMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int    `json:"max_tokens"`
	MaxCompletionTokens int    `json:"max_completion_tokens"`
	PromptCacheKey      string `json:"prompt_cache_key"`
}

type oaMessage struct {
	Role       string           `json:"role"`
	Content    json.RawMessage  `json:"content"`
	ToolCalls  []store.ToolCall `json:"tool_calls"`
	ToolCallID string           `json:"tool_call_id"`
	Name       string           `json:"name"`
}

type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

func (m *Model) serveOpenAI(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	w.Header().Set("openai-version", "2020-10-01")
	body, err := readBody(r)
	w.Header().Set("x-request-id", "req_"+shortHash(key+"\x00"+string(body), 32))
	if m.cfg.APIKey != "" && key != m.cfg.APIKey {
		writeWireError(w, openAIError(FaultAuth, "", key, 0, 0))
		return
	}
	if err != nil {
		writeWireError(w, openAIInvalid("We could not read the body of your request: "+err.Error(), ""))
		return
	}
	var req oaRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeWireError(w, openAIInvalid("We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)", ""))
		return
	}
	if req.Model == "" {
		writeWireError(w, openAIInvalid("you must provide a model parameter", ""))
		return
	}
	c := call{wire: "openai", model: req.Model, idPrefix: "call_",
		cacheKey:  keyFingerprint(key) + "/" + req.Model + "/" + req.PromptCacheKey,
		maxTokens: req.MaxCompletionTokens}
	if c.maxTokens == 0 {
		c.maxTokens = req.MaxTokens
	}
	for _, t := range req.Tools {
		c.tools = append(c.tools, provider.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	var systems []string
	for i, msg := range req.Messages {
		text, ok := textOf(msg.Content)
		if !ok {
			writeWireError(w, openAIInvalid(fmt.Sprintf("Invalid type for 'messages[%d].content': expected one of a string or array of objects, but got an object instead.", i), fmt.Sprintf("messages[%d].content", i)))
			return
		}
		switch msg.Role {
		case "system", "developer":
			systems = append(systems, text)
		case "user", "assistant", "tool":
			c.msgs = append(c.msgs, provider.Message{Role: msg.Role, Content: text, ToolCalls: msg.ToolCalls, ToolCallID: msg.ToolCallID, ToolName: msg.Name})
		default:
			writeWireError(w, openAIInvalid(fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", msg.Role), fmt.Sprintf("messages[%d].role", i)))
			return
		}
	}
	c.system = strings.Join(systems, "\n")
	c.segs = neutralSegments(c.system, c.msgs, c.tools)

	res, f := m.process(c)
	if f != nil {
		if f.message != "" {
			writeWireError(w, openAIInvalid(f.message, "messages"))
		} else {
			writeWireError(w, openAIError(f.kind, req.Model, key, f.prompt, m.cfg.ContextWindow))
		}
		return
	}
	if err := res.hold(r.Context()); err != nil {
		return
	}
	id := "chatcmpl-" + res.seed[:29]
	created := m.cfg.Now().Unix()
	usage := oaUsage{PromptTokens: res.usage.prompt, CompletionTokens: res.output, TotalTokens: res.usage.prompt + res.output}
	usage.PromptTokensDetails.CachedTokens = res.usage.read
	if req.Stream {
		m.streamOpenAI(w, r, req, res, id, created, usage)
		return
	}
	var content *string
	if res.text != "" || len(res.calls) == 0 {
		content = &res.text
	}
	resp := oaResponse{ID: id, Object: "chat.completion", Created: created, Model: req.Model,
		Choices: []oaChoice{{Message: oaRespMessage{Role: "assistant", Content: content,
			ToolCalls: res.calls, Annotations: []any{}}, FinishReason: res.finish}},
		Usage: usage, ServiceTier: "default", SystemFingerprint: fingerprint}
	body = indentJSON(resp, "  ")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("openai-processing-ms", strconv.Itoa(int(res.delay.Milliseconds())))
	if res.cut {
		w.WriteHeader(http.StatusOK)
		w.Write(body[:len(body)/2])
		cutResponse(w)
	}
	w.Write(body)
}

const fingerprint = "fp_fake0000"

type oaResponse struct {
	ID                string     `json:"id"`
	Object            string     `json:"object"`
	Created           int64      `json:"created"`
	Model             string     `json:"model"`
	Choices           []oaChoice `json:"choices"`
	Usage             oaUsage    `json:"usage"`
	ServiceTier       string     `json:"service_tier"`
	SystemFingerprint string     `json:"system_fingerprint"`
}

type oaChoice struct {
	Index        int           `json:"index"`
	Message      oaRespMessage `json:"message"`
	Logprobs     *struct{}     `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

type oaRespMessage struct {
	Role        string           `json:"role"`
	Content     *string          `json:"content"`
	ToolCalls   []store.ToolCall `json:"tool_calls,omitempty"`
	Refusal     *string          `json:"refusal"`
	Annotations []any            `json:"annotations"`
}

type oaChunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	ServiceTier       string          `json:"service_tier"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []oaChunkChoice `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"` // null on every chunk but the last, only with include_usage
	Obfuscation       string          `json:"obfuscation"`
}

type oaChunkChoice struct {
	Index        int       `json:"index"`
	Delta        oaDelta   `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type oaDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	ToolCalls []oaToolDelta   `json:"tool_calls,omitempty"`
	Refusal   json.RawMessage `json:"refusal,omitempty"`
}

type oaToolDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// streamOpenAI writes the chunk sequence of fixtures 03 and 04a: a first chunk with the role
// (and the first tool call's header when there is no text), content pieces, argument pieces,
// an empty delta with finish_reason, the usage chunk with empty choices when include_usage was
// asked, then [DONE].
func (m *Model) streamOpenAI(w http.ResponseWriter, r *http.Request, req oaRequest, res result, id string, created int64, usage oaUsage) {
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	var chunks []oaChunk
	add := func(d oaDelta, finish *string) {
		ch := oaChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model,
			ServiceTier: "default", SystemFingerprint: fingerprint,
			Choices: []oaChunkChoice{{Delta: d, FinishReason: finish}}}
		chunks = append(chunks, ch)
	}
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	null := json.RawMessage("null")
	header := func(i int) oaToolDelta {
		tc := res.calls[i]
		d := oaToolDelta{Index: i, ID: tc.ID, Type: "function"}
		d.Function.Name = tc.Function.Name
		return d
	}
	first := oaDelta{Role: "assistant", Content: str(""), Refusal: null}
	if res.text == "" && len(res.calls) > 0 {
		first.Content = null
		first.ToolCalls = []oaToolDelta{header(0)}
	}
	add(first, nil)
	for _, p := range splitText(res.text) {
		add(oaDelta{Content: str(p)}, nil)
	}
	for i, tc := range res.calls {
		if i > 0 || first.ToolCalls == nil {
			add(oaDelta{ToolCalls: []oaToolDelta{header(i)}}, nil)
		}
		for _, p := range argPieces(tc.Function.Arguments) {
			d := oaToolDelta{Index: i}
			d.Function.Arguments = p
			add(oaDelta{ToolCalls: []oaToolDelta{d}}, nil)
		}
	}
	finish := res.finish
	add(oaDelta{}, &finish)
	if includeUsage {
		u, _ := json.Marshal(usage)
		for i := range chunks {
			chunks[i].Usage = null
		}
		chunks = append(chunks, oaChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model,
			ServiceTier: "default", SystemFingerprint: fingerprint, Choices: []oaChunkChoice{}, Usage: u})
	}

	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	sw := &streamWriter{w: w, r: r, delay: m.cfg.ChunkDelay}
	for i, ch := range chunks {
		if res.cut && i == len(chunks)/2 {
			cutResponse(w)
		}
		ch.Obfuscation = obfuscation(res.seed, i)
		sw.frame(append(append([]byte("data: "), compactJSON(ch)...), '\n', '\n'))
	}
	sw.frame([]byte("data: [DONE]\n\n"))
}
