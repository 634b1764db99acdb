package openai_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodeSDK drives spool serve with the official npm openai package (testdata/node/sdk.mjs):
// a plain and a streamed answer with the usage chunk, an error shape, the 409 busy path retried
// by the SDK itself, and an idempotent retry.
func TestNodeSDK(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.Abs(filepath.Join("testdata", "node"))
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	default:
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
			missing = "the npm openai package is not installed (npm install --prefix gateway/openai/testdata/node)"
		}
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s; .ci/run installs it", missing)
		}
		t.Skipf("%s; to run this test: npm install --prefix gateway/openai/testdata/node", missing)
	}
	up := newUpstream(t)
	home := t.TempDir()
	s := startServe(t, home, up.providerConfig()+"serve:\n  busy_wait: 0s\n  retry_after: 20ms\n")
	cmd := exec.Command(node, filepath.Join(dir, "sdk.mjs"))
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "SPOOL_URL="+s.url, "UPSTREAM_URL="+up.URL)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("node sdk.mjs: %v\n%s\nserver:\n%s", err, stderr.String(), s.stderr.String())
	}
	var out struct {
		First struct {
			Sid, Content, Object string
			Usage                struct {
				PromptTokens int `json:"prompt_tokens"`
			}
		}
		Stream struct {
			Text   string
			Chunks int
			Usage  *struct {
				PromptTokens        int `json:"prompt_tokens"`
				PromptTokensDetails *struct {
					CachedTokens *int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
				CompletionTokensDetails *struct {
					ReasoningTokens *int `json:"reasoning_tokens"`
				} `json:"completion_tokens_details"`
			}
		}
		Error struct {
			Thrown, IsAPIError bool
			Status, Attempts   int
			Code, Type         string
		}
		Busy struct {
			Statuses      []int
			Content, Slow string
		}
		Idempotent struct {
			SameID bool `json:"sameId"`
			A, B   string
		}
		Tools struct {
			Sid, Sid2, Finish, Name, Args, After, Finish3, Args3, Streamed string
		}
	}
	if err := json.Unmarshal(outb, &out); err != nil {
		t.Fatalf("node output: %v\n%s", err, outb)
	}
	if out.First.Sid == "" || out.First.Object != "chat.completion" || out.First.Usage.PromptTokens == 0 {
		t.Errorf("first answer: %+v", out.First)
	}
	wantAnswer(t, out.First.Content, "hello from node")
	wantAnswer(t, out.Stream.Text, "streamed in node")
	if u := out.Stream.Usage; u == nil || u.PromptTokens == 0 || u.PromptTokensDetails == nil || u.PromptTokensDetails.CachedTokens == nil ||
		u.CompletionTokensDetails == nil || u.CompletionTokensDetails.ReasoningTokens == nil {
		t.Errorf("stream usage chunk: %+v", out.Stream.Usage)
	}
	if e := out.Error; !e.Thrown || !e.IsAPIError || e.Status != 404 || e.Code != "model_not_found" || e.Type != "invalid_request_error" || e.Attempts != 1 {
		t.Errorf("error: %+v", e)
	}
	// The 409 of the second request, the running turn's 200 (awaited before the SDK sees the
	// 409), then the SDK's own retry: 200.
	if b := out.Busy; len(b.Statuses) != 3 || b.Statuses[0] != 409 || b.Statuses[1] != 200 || b.Statuses[2] != 200 {
		t.Errorf("busy path: statuses %v, want [409 200 200]", b.Statuses)
	}
	wantAnswer(t, out.Busy.Content, "second in node")
	if !out.Idempotent.SameID || out.Idempotent.A != out.Idempotent.B {
		t.Errorf("idempotent retry: %+v", out.Idempotent)
	}
	if tl := out.Tools; tl.Sid == "" || tl.Sid2 != tl.Sid || tl.Finish != "tool_calls" || tl.Name != "get_weather" || tl.Args != `{"city":"Lima"}` ||
		!strings.Contains(tl.After, `get_weather returned "foggy"`) || tl.Finish3 != "tool_calls" || tl.Args3 != `{"city":"Cusco"}` ||
		!strings.Contains(tl.Streamed, `get_weather returned "sunny"`) {
		t.Errorf("client tool round trips: %+v", tl)
	}
	if _, _, _, tm := transcript(t, home, out.Tools.Sid); shownRoles(tm) != "user assistant(1) tool assistant user assistant(1) tool assistant" {
		t.Errorf("the tool session holds %s", shownRoles(tm))
	}
	_, _, _, msgs := transcript(t, home, out.First.Sid)
	var said []string
	for _, m := range msgs {
		if m.Role == "user" {
			said = append(said, m.Content)
		}
	}
	if strings.Join(said, "|") != "hello from node|streamed in node|slow one gate:nodebusy|second in node|once from node" {
		t.Errorf("the session's user messages: %q", said)
	}
}
