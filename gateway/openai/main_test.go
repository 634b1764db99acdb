package openai_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/testbin"
	"github.com/spoolhq/spool/provider/fake"
)

// spoolBin is the real spool binary, built once for the package.
var spoolBin string

func TestMain(m *testing.M) {
	testbin.Main(m, map[string]*string{"github.com/spoolhq/spool/cmd/spool": &spoolBin})
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPOOL_") && !strings.HasPrefix(kv, "OPENAI_") {
			env = append(env, kv)
		}
	}
	return env
}

// server is one running `spool serve` process.
type server struct {
	url    string // http://127.0.0.1:PORT
	home   string
	cmd    *exec.Cmd
	stderr *syncBuffer
	waited chan error
	lines  chan string // stderr lines after the listening one
}

// waitLine waits for a stderr line containing sub.
func (s *server) waitLine(t *testing.T, sub string) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("spool serve ended without printing %q:\n%s", sub, s.stderr.String())
			}
			if strings.Contains(l, sub) {
				return
			}
		case <-timeout:
			t.Fatalf("spool serve never printed %q:\n%s", sub, s.stderr.String())
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listenRe = regexp.MustCompile(`listening on (http://\S+)`)

// startServe runs `spool serve --listen 127.0.0.1:0` in home with config (YAML, may be "") and
// returns once it listens. The process is stopped with SIGTERM when the test ends.
func startServe(t *testing.T, home, config string, args ...string) *server {
	t.Helper()
	return startServeEnv(t, home, config, nil, args...)
}

// startServeEnv is startServe with extra environment variables ("K=V").
func startServeEnv(t *testing.T, home, config string, env []string, args ...string) *server {
	t.Helper()
	if config != "" {
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(spoolBin, append([]string{"--home", home, "serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = cleanEnv()
	cmd.Env = append(cmd.Env, "UPSTREAM_KEY=test-upstream-key")
	cmd.Env = append(cmd.Env, env...)
	pr, pw := io.Pipe()
	s := &server{home: home, cmd: cmd, stderr: &syncBuffer{}, waited: make(chan error, 1), lines: make(chan string, 256)}
	cmd.Stderr = io.MultiWriter(s.stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		pw.Close()
		s.waited <- err
	}()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		listening := false
		for sc.Scan() {
			if !listening {
				if m := listenRe.FindStringSubmatch(sc.Text()); m != nil {
					listening = true
					found <- m[1]
				}
				continue
			}
			select {
			case s.lines <- sc.Text():
			default: // nobody is waiting for lines this far
			}
		}
		if !listening {
			close(found)
		}
		close(s.lines)
	}()
	u, ok := <-found
	if !ok {
		<-s.waited
		t.Fatalf("spool serve did not start:\n%s", s.stderr.String())
	}
	s.url = u
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop sends SIGTERM and waits for the process (once).
func (s *server) stop(t *testing.T) error {
	if s.cmd.ProcessState != nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.waited:
		s.waited <- err
		return err
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		t.Errorf("spool serve did not stop after SIGTERM:\n%s", s.stderr.String())
		return fmt.Errorf("killed")
	}
}

// spoolCLI runs the spool CLI on home and returns stdout.
func spoolCLI(t *testing.T, home string, args ...string) string {
	t.Helper()
	cmd := exec.Command(spoolBin, append([]string{"--home", home}, args...)...)
	cmd.Env = cleanEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("spool %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

type shownMessage struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID string `json:"id"`
	} `json:"tool_calls"`
	Summary bool `json:"summary"`
	Active  bool `json:"active"`
}

// transcript is what `spool sessions show ID --json` says a session holds.
func transcript(t *testing.T, home, id string) (source, userID, parent string, msgs []shownMessage) {
	t.Helper()
	var v struct {
		Source   string         `json:"source"`
		UserID   string         `json:"user_id"`
		ParentID string         `json:"parent_id"`
		Messages []shownMessage `json:"messages"`
	}
	out := spoolCLI(t, home, "sessions", "show", id, "--json")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("sessions show --json: %v\n%s", err, out)
	}
	return v.Source, v.UserID, v.ParentID, v.Messages
}

// upstream is the fake model over HTTP, with gates: the first request whose last user message
// contains "gate:NAME" is held until the test opens that gate (and the test hears it arrive).
type upstream struct {
	*httptest.Server
	mu      sync.Mutex
	gates   map[string]*gate
	started map[string]bool
}

type gate struct {
	arrived chan struct{}
	open    chan struct{}
}

var gateRe = regexp.MustCompile(`gate:([a-z0-9]+)`)

func newUpstream(t *testing.T) *upstream {
	u := &upstream{gates: map[string]*gate{}, started: map[string]bool{}}
	h := fake.New(fake.Config{}).Handler()
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Gate controls for scripts in other processes (the Node test).
		if name, ok := strings.CutPrefix(r.URL.Path, "/gate/arrived/"); ok {
			select {
			case <-u.gate(name).arrived:
			case <-r.Context().Done():
			}
			return
		}
		if name, ok := strings.CutPrefix(r.URL.Path, "/gate/open/"); ok {
			u.open(name)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
			if m := gateRe.FindStringSubmatch(fmt.Sprint(req.Messages[n-1].Content)); m != nil {
				g := u.gate(m[1])
				u.mu.Lock()
				first := !u.started[m[1]]
				u.started[m[1]] = true
				u.mu.Unlock()
				if first {
					close(g.arrived)
					<-g.open
				}
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		u.mu.Lock()
		for _, g := range u.gates {
			select {
			case <-g.open:
			default:
				close(g.open)
			}
		}
		u.mu.Unlock()
		u.Close()
	})
	return u
}

func (u *upstream) gate(name string) *gate {
	u.mu.Lock()
	defer u.mu.Unlock()
	g := u.gates[name]
	if g == nil {
		g = &gate{arrived: make(chan struct{}), open: make(chan struct{})}
		u.gates[name] = g
	}
	return g
}

// arrived waits until the gated request reached the model.
func (u *upstream) arrived(t *testing.T, name string) {
	t.Helper()
	select {
	case <-u.gate(name).arrived:
	case <-time.After(2 * time.Minute):
		t.Fatalf("gated request %s never reached the model", name)
	}
}

func (u *upstream) open(name string) {
	g := u.gate(name)
	u.mu.Lock()
	defer u.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// providerConfig points spool at the upstream.
func (u *upstream) providerConfig() string {
	return fmt.Sprintf("provider:\n  name: openai\n  model: fake-model\n  base_url: %s/v1\n  api_key_env: UPSTREAM_KEY\n", u.URL)
}

var sigterm = syscall.SIGTERM
