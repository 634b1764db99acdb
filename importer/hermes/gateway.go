package hermes

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/spoolhq/spool/internal/regfile"
	"github.com/spoolhq/spool/store"
)

// gatewayEntry is one sessions.json entry: a session key and the session it continues.
type gatewayEntry struct {
	route    store.Route
	platform string
	thread   string // the lane's thread id, when the entry names one
}

// id is an id Hermes writes as a string or a number.
type id string

func (v *id) UnmarshalJSON(b []byte) error {
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	switch t := x.(type) {
	case string:
		*v = id(t)
	case float64:
		*v = id(strconv.FormatFloat(t, 'f', -1, 64))
	}
	return nil
}

// readGateway reads sessions/sessions.json (absent: no entries). A file that is not a JSON
// object of entries is an error: the import stops before anything is stored. Entries without a
// session id are skipped with a reason.
func readGateway(path string) ([]gatewayEntry, []Skip, error) {
	data, err := regfile.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read sessions/sessions.json: %w", pathErr(err))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, nil, fmt.Errorf("sessions/sessions.json is not a JSON object of session entries: %v", err)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []gatewayEntry
	var skipped []Skip
	for _, k := range keys {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw[k], &obj); err != nil {
			skipped = append(skipped, Skip{Kind: "route", ID: k, Reason: "entry is not a JSON object"})
			continue
		}
		var e struct {
			SessionID     string `json:"session_id"`
			Platform      string `json:"platform"`
			UpdatedAt     string `json:"updated_at"`
			Suspended     bool   `json:"suspended"`
			ResumePending bool   `json:"resume_pending"`
			ThreadID      id     `json:"thread_id"`
			Origin        struct {
				ThreadID id `json:"thread_id"`
			} `json:"origin"`
		}
		if err := json.Unmarshal(raw[k], &e); err != nil || e.SessionID == "" {
			skipped = append(skipped, Skip{Kind: "route", ID: k, Reason: "entry has no session_id"})
			continue
		}
		if k == "" || k[0] == '/' {
			skipped = append(skipped, Skip{Kind: "route", ID: k, Reason: "not a valid session key"})
			continue
		}
		// The rest of the entry is the lane's origin metadata.
		delete(obj, "session_key")
		delete(obj, "session_id")
		origin, _ := json.Marshal(obj)
		r := store.Route{Key: k, SessionID: e.SessionID, Suspended: e.Suspended, ResumePending: e.ResumePending,
			Origin: origin}
		if t, err := time.ParseInLocation("2006-01-02T15:04:05.999999", e.UpdatedAt, time.Local); err == nil {
			r.UpdatedAt = t
		} else if t, err := time.Parse(time.RFC3339Nano, e.UpdatedAt); err == nil {
			r.UpdatedAt = t
		}
		thread := string(e.Origin.ThreadID)
		if thread == "" {
			thread = string(e.ThreadID)
		}
		out = append(out, gatewayEntry{route: r, platform: e.Platform, thread: thread})
	}
	return out, skipped, nil
}
