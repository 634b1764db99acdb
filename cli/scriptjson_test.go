package cli_test

import (
	"bufio"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// jsonLines decodes stdout as one JSON object per line.
func jsonLines(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not one JSON object per line: %q: %v", sc.Text(), err)
		}
		out = append(out, ev)
	}
	return out
}

// TestStreamJSONStartsWithInit: the first stream-json event names the session (the same id as
// the result), the model, the working directory and the tools offered.
func TestStreamJSONStartsWithInit(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	evs := jsonLines(t, spool(t, home, "run", "--output-format", "stream-json", "SAY hi").ok(t, "stream-json").stdout)
	if len(evs) < 2 {
		t.Fatalf("events %v", evs)
	}
	init, last := evs[0], evs[len(evs)-1]
	res, _ := last["result"].(map[string]any)
	var tools []string
	for _, x := range init["tools"].([]any) {
		tools = append(tools, x.(string))
	}
	if init["type"] != "init" || init["session_id"] == nil || init["session_id"] != res["session_id"] ||
		init["model"] != "fake" || init["cwd"] == "" || !slices.Contains(tools, "list_files") {
		t.Errorf("first event %v, result %v", init, res)
	}
}

// TestJSONFailures: every failure in json and stream-json is one JSON object on stdout with the
// error class, the session id when there is one, and the message, with the exit status of the
// failure; a failed turn's session holds the user's message.
func TestJSONFailures(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, c := range []struct {
		name    string
		args    []string
		code    int
		class   string
		session bool
	}{
		{"provider json", []string{"--output-format", "json", "--provider", "fake", "FAULT auth"}, 1, "auth", true},
		{"provider --json", []string{"--json", "--provider", "fake", "FAULT bad_request"}, 1, "bad_request", true},
		{"provider stream-json", []string{"--output-format", "stream-json", "--provider", "fake", "FAULT auth"}, 1, "auth", true},
		{"unknown flag", []string{"--output-format", "json", "--mdoel", "x", "hi"}, 2, "usage", false},
		{"bad value", []string{"--output-format", "stream-json", "--context-length", "5", "hi"}, 2, "usage", false},
		{"unknown session", []string{"--json", "--resume", "nosuchsession", "hi"}, 1, "error", false},
	} {
		r := spool(t, home, append([]string{"run"}, c.args...)...)
		if r.code != c.code {
			t.Errorf("%s: exit %d, want %d (stderr %q)", c.name, r.code, c.code, r.stderr)
		}
		var e map[string]any
		if strings.Contains(c.name, "stream-json") || strings.Contains(strings.Join(c.args, " "), "stream-json") {
			evs := jsonLines(t, r.stdout)
			if len(evs) == 0 {
				t.Errorf("%s: nothing on stdout", c.name)
				continue
			}
			e = evs[len(evs)-1]
		} else if err := json.Unmarshal([]byte(r.stdout), &e); err != nil {
			t.Errorf("%s: stdout is not one JSON object: %v: %q", c.name, err, r.stdout)
			continue
		}
		sid, _ := e["session_id"].(string)
		if e["type"] != "error" || e["error_class"] != c.class || e["error"] == "" || (sid != "") != c.session {
			t.Errorf("%s: %v, want class %s (session: %v)", c.name, e, c.class, c.session)
		}
		if sid != "" {
			shown := decode[shownMessages](t, spool(t, home, "sessions", "show", sid, "--json").ok(t, "show"))
			if len(shown.Messages) == 0 || shown.Messages[0].Role != "user" {
				t.Errorf("%s: session %s holds %+v", c.name, sid, shown.Messages)
			}
		}
	}
}

// TestJSONCostUnknownIsNull: cost_usd is null where the chat says "n/a" (the price is not known)
// and a number for a priced model.
func TestJSONCostUnknownIsNull(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, c := range []struct {
		args  []string
		known bool
	}{
		{[]string{"SAY hi"}, false},
		{[]string{"--provider", "fake", "--model", "claude-sonnet-4-5", "SAY hi"}, true},
	} {
		var out struct {
			Usage map[string]any `json:"usage"`
		}
		r := spool(t, home, append([]string{"run", "--json"}, c.args...)...).ok(t, "run")
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatal(err)
		}
		cost, present := out.Usage["cost_usd"]
		if _, isNum := cost.(float64); !present || isNum != c.known || (!c.known && cost != nil) {
			t.Errorf("%v: usage %v, want cost_usd %s", c.args, out.Usage, map[bool]string{true: "a number", false: "null"}[c.known])
		}
	}
}
