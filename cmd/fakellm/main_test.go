package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProcessServesBothFormats builds fakellm, starts it as a real process on a free port,
// reads the URL from its first stdout line and talks to it over HTTP.
func TestProcessServesBothFormats(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary; run without -short")
	}
	bin := filepath.Join(t.TempDir(), "fakellm")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-fail", "rate_limit", "-fail-count", "1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		go func() { exited <- cmd.Wait() }()
		t.Fatalf("no URL on stdout; stderr: %s", stderr.String())
	}
	base := lines.Text()
	go func() { exited <- cmd.Wait() }()
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("first line %q is not a URL", base)
	}

	client := &http.Client{Timeout: 10 * time.Second}
	postJSON := func(path, body string, headers map[string]string) (int, []byte) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, err = bufio.NewReader(resp.Body).WriteTo(&b)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, []byte(b.String())
	}
	oa := `{"model":"gpt-4.1","messages":[{"role":"user","content":"hello from a process"}]}`
	if code, body := postJSON("/v1/chat/completions", oa, nil); code != 429 {
		t.Errorf("-fail rate_limit: first call %d %s", code, body)
	}
	code, body := postJSON("/v1/chat/completions", oa, nil)
	var r struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	if err := json.Unmarshal(body, &r); code != 200 || err != nil || !strings.Contains(r.Choices[0].Message.Content, "hello from a process") {
		t.Errorf("openai: %d %s", code, body)
	}
	code, body = postJSON("/v1/messages", `{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"anthropic-version": "2023-06-01", "x-api-key": "k"})
	if code != 200 || !strings.Contains(string(body), `"type":"message"`) {
		t.Errorf("anthropic: %d %s", code, body)
	}

	// SIGTERM shuts it down cleanly with a stats line.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Errorf("exit: %v; stderr: %s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "3 requests (1 failed)") {
			t.Errorf("stats line missing: %q", stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Error("no exit 10s after SIGTERM")
	}
}

func TestFlagErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-fail", "explode"}, {"-fail-count", "0"}, {"extra"}, {"-addr", "not-an-address"}} {
		var out, errb strings.Builder
		if err := run(t.Context(), args, &out, &errb); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
