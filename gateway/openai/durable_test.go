package openai_test

import (
	"database/sql"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/gateway/openai"
)

// TestFailedStoreWritesSurface: a store write that fails after the turn (made to fail by a
// trigger that RAISEs in the real SQLite database) is never dropped. The client hears it: a
// store: false response whose session cannot be deleted answers 500 not_deleted (in a stream,
// response.failed), and a response whose record cannot be written answers 500
// response_not_recorded; both without x-should-retry, and each with an error line in the log
// naming the session. On the old code both answered 200 and said nothing.
func TestFailedStoreWritesSurface(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, trigger, body string
		stream              bool
		code, logged        string
	}{
		{"store false, deletion refused", "BEFORE DELETE ON sessions", `{"model":"fake","store":false,"input":"forget me"}`, false,
			"not_deleted", "was not deleted and stays stored"},
		{"store false streamed, deletion refused", "BEFORE DELETE ON sessions", `{"model":"fake","store":false,"stream":true,"input":"forget me"}`, true,
			"store: false was not honoured", "was not deleted and stays stored"},
		{"record refused", "BEFORE UPDATE ON api_responses", `{"model":"fake","input":"remember me"}`, false,
			"response_not_recorded", "the response record was not written"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "spool.db")
			var logs syncBuffer
			_, url, _ := inProcessAt(t, path, openai.Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
			raw, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Exec("CREATE TRIGGER refuse " + c.trigger + " BEGIN SELECT RAISE(ABORT, 'disk refuses'); END"); err != nil {
				t.Fatal(err)
			}
			code, body := wireCall(t, "POST", url+"/v1/responses", c.body)
			var sessions int
			if err := raw.QueryRow("SELECT count(*) FROM sessions").Scan(&sessions); err != nil {
				t.Fatal(err)
			}
			if sessions != 1 {
				t.Fatalf("%d sessions stored, want the turn's one", sessions)
			}
			var sid string
			if err := raw.QueryRow("SELECT id FROM sessions").Scan(&sid); err != nil {
				t.Fatal(err)
			}
			if c.stream {
				events := sseData(t, body)
				last := events[len(events)-1]
				if code != 200 || !strings.Contains(string(last), `"type":"response.failed"`) || !strings.Contains(string(last), c.code) {
					t.Fatalf("stream ended with %s", last)
				}
			} else {
				var e struct {
					Error struct{ Code, Message string }
				}
				if err := json.Unmarshal(body, &e); err != nil || code != 500 || e.Error.Code != c.code || !strings.Contains(e.Error.Message, sid) {
					t.Fatalf("answer %d %s, want 500 %s naming session %s", code, body, c.code, sid)
				}
			}
			if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, c.logged) || !strings.Contains(l, "session="+sid) {
				t.Fatalf("log %q, want an error line %q naming session %s", l, c.logged, sid)
			}
		})
	}
}
