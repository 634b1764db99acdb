package cli_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spoolhq/spool/provider/fake"
)

// provider.fallbacks end to end, through the real binary and two fake endpoints on real HTTP:
// the main model answers two turns, then its endpoint stops serving the model (a real OpenAI
// model_not_found 404, which the retry wrapper does not retry); the fallback answers, and the
// next turn of the same chat starts on it (the cooldown). /usage, `sessions show` (text and
// JSON) and `config explain` say which model answered and why the cache broke.
func TestFallbackEndToEnd(t *testing.T) {
	t.Parallel()
	mainModel := fake.New(fake.Config{})
	mh := mainModel.Handler()
	main := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("MAINDOWN")) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"message":"The model ` + "`main-model`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		mh.ServeHTTP(w, r)
	}))
	t.Cleanup(main.Close)
	smallModel := fake.New(fake.Config{ContextWindow: 16_000})
	small := httptest.NewServer(smallModel.Handler())
	t.Cleanup(small.Close)

	home := writeConfig(t, `provider:
  name: openai
  model: main-model
  base_url: `+main.URL+`/v1
  context_length: 200000
  fallback_cooldown: 1h
  fallbacks:
    - name: small
      model: small-model
      base_url: `+small.URL+`/v1
      context_length: 16000
`)
	filler := strings.Repeat("a long and stable opening that the prompt cache keeps ", 100)
	stdin := "SAY one " + filler + "\nSAY two\nSAY three MAINDOWN\nSAY four\n/usage\n"
	r := spoolIn(t, home, stdin, "chat").ok(t, "chat")
	for _, want := range []string{"one a long", "two\n", "three MAINDOWN", "four\n",
		"Models: main-model 2 calls, small-model 2 calls (fallback small)",
		"at model 0 (fallback), ", "  model main-model -> small-model (fallback small; the main model main-model failed: model_not_found)",
		"[small-model (fallback small) · "} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("chat output lacks %q:\nstdout: %s\nstderr: %s", want, r.stdout, r.stderr)
		}
	}
	if !strings.Contains(r.stderr, "The main model main-model failed (openai: model_not_found (HTTP 404)") ||
		!strings.Contains(r.stderr, "asking fallback small (small-model)") {
		t.Errorf("stderr does not announce the switch:\n%s", r.stderr)
	}
	if s := smallModel.Stats(); s.Requests != 2 || s.Failed != 0 {
		t.Errorf("fallback stats %+v: want the two turns after the failure", s)
	}

	show := spool(t, home, "sessions", "show", "--active", lastSessionID(t, home)).ok(t, "sessions show").stdout
	for _, want := range []string{"Models:", "main-model 2 calls, small-model 2 calls (fallback small)", "Last switch:", "main-model -> small-model"} {
		if !strings.Contains(show, want) {
			t.Errorf("sessions show lacks %q:\n%s", want, show)
		}
	}
	type shown struct {
		Models []struct {
			Model    string `json:"model"`
			Fallback string `json:"fallback"`
			Calls    int    `json:"calls"`
		} `json:"models"`
	}
	j := decode[shown](t, spool(t, home, "--json", "sessions", "show", lastSessionID(t, home)).ok(t, "sessions show --json"))
	if len(j.Models) != 2 || j.Models[0].Model != "main-model" || j.Models[0].Fallback != "" ||
		j.Models[1].Model != "small-model" || j.Models[1].Fallback != "small" || j.Models[1].Calls != 2 {
		t.Errorf("sessions show --json models: %+v", j.Models)
	}

	ex := spool(t, home, "config", "explain").ok(t, "config explain").stdout
	if !strings.Contains(ex, "1. small: openai small-model at "+small.URL+"/v1, api chat, window 16000 tokens (provider.fallbacks[0].context_length), compacts at 13600 tokens") ||
		!strings.Contains(ex, "1h0m0s after it failed") || !strings.Contains(ex, "never on auth") {
		t.Errorf("config explain does not show the fallback:\n%s", ex)
	}
}

// lastSessionID is the id of the home's most recent session.
func lastSessionID(t *testing.T, home string) string {
	t.Helper()
	type listed struct {
		ID string `json:"id"`
	}
	ls := decode[[]listed](t, spool(t, home, "--json", "sessions", "list").ok(t, "sessions list"))
	if len(ls) == 0 {
		t.Fatal("no session")
	}
	return ls[0].ID
}

// A fallback whose key variable is unset does not stop `spool run` while the main model
// answers: one warning at start names the variable. When a turn needs that fallback, the turn
// fails saying exactly which variable is missing.
func TestFallbackWithoutKeyWarnsUntilNeeded(t *testing.T) {
	t.Parallel()
	mainModel := fake.New(fake.Config{})
	mh := mainModel.Handler()
	main := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("MAINDOWN")) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"message":"The model does not exist.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		mh.ServeHTTP(w, r)
	}))
	t.Cleanup(main.Close)
	home := writeConfig(t, `provider:
  name: openai
  model: main-model
  base_url: `+main.URL+`/v1
  fallbacks:
    - name: cloud
      model: gpt-4o-mini
      base_url: https://api.openai.com/v1
      api_key_env: SPOOL_TEST_UNSET_FALLBACK_KEY
`)
	r := spool(t, home, "run", "SAY fine").ok(t, "run with the main model up")
	if !strings.Contains(r.stdout, "fine") {
		t.Errorf("run stdout %q lacks the answer", r.stdout)
	}
	if want := "spool: warning: fallback cloud has no API key (set SPOOL_TEST_UNSET_FALLBACK_KEY)"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	r = spool(t, home, "run", "SAY down MAINDOWN")
	if r.code == 0 {
		t.Fatalf("run succeeded with the main model down and the fallback unkeyed:\n%s", r.stdout)
	}
	if want := "fallback cloud has no API key: SPOOL_TEST_UNSET_FALLBACK_KEY is not set (provider.fallbacks[0].api_key_env in the config)"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	if s := mainModel.Stats(); s.Requests < 1 {
		t.Errorf("main model stats %+v", s)
	}
}

// The fallback cooldown outlives the process that saw the failure: a `spool run` whose main
// model fails falls back and stores the cooldown; the next `spool run` (another process, the
// main model healthy again) starts on the fallback without asking the main model, and says so.
func TestFallbackCooldownAcrossProcesses(t *testing.T) {
	t.Parallel()
	mainModel := fake.New(fake.Config{})
	mh := mainModel.Handler()
	var mainCalls atomic.Int64
	main := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mainCalls.Add(1)
		if bytes.Contains(body, []byte("MAINDOWN")) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"message":"The model does not exist.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		mh.ServeHTTP(w, r)
	}))
	t.Cleanup(main.Close)
	spare := fake.New(fake.Config{})
	fb := httptest.NewServer(spare.Handler())
	t.Cleanup(fb.Close)
	home := writeConfig(t, `provider:
  name: openai
  model: main-model
  base_url: `+main.URL+`/v1
  fallback_cooldown: 1h
  fallbacks:
    - name: spare
      model: spare-model
      base_url: `+fb.URL+`/v1
`)
	type ran struct {
		Reply    string `json:"reply"`
		Model    string `json:"model"`
		Fallback string `json:"fallback"`
	}
	first := decode[ran](t, spool(t, home, "--json", "run", "SAY one MAINDOWN").ok(t, "first run"))
	if first.Fallback != "spare" || first.Model != "spare-model" {
		t.Fatalf("first run: %+v, want the fallback", first)
	}
	before := mainCalls.Load()
	second := decode[ran](t, spool(t, home, "--json", "run", "SAY two").ok(t, "second run"))
	if second.Fallback != "spare" || !strings.Contains(second.Reply, "two") {
		t.Errorf("second run: %+v, want it to start on the fallback (the cooldown of the first process)", second)
	}
	if n := mainCalls.Load() - before; n != 0 {
		t.Errorf("the second process asked the cooling main model %d times", n)
	}
	if s := spare.Stats(); s.Requests != 2 {
		t.Errorf("fallback stats %+v: want both runs' calls", s)
	}
}
