package hermes

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/regfile"
	"github.com/spoolhq/spool/store"
)

// maxLine bounds one JSONL line (a message with a huge tool output); longer lines are skipped.
const maxLine = 64 << 20

// jsonlMessage is one line of a legacy transcript: a message in the OpenAI format, with the
// reference's extra fields when it wrote them.
type jsonlMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
	Name             string          `json:"name"`
	ToolName         string          `json:"tool_name"`
	Reasoning        string          `json:"reasoning"`
	ReasoningContent string          `json:"reasoning_content"`
	ReasoningDetails json.RawMessage `json:"reasoning_details"`
	FinishReason     string          `json:"finish_reason"`
	Timestamp        json.RawMessage `json:"timestamp"`
}

// transcript is a parsed legacy JSONL file.
type transcript struct {
	messages []store.Message
	// skipped lines, each with its line number and reason.
	skipped []Skip
	notes   []Skip // fields that could not be carried
}

// readTranscript parses a JSONL transcript. Lines that are not a JSON message object are skipped
// with a reason; blank lines are ignored. Messages without a timestamp get start.
func readTranscript(path, rel string, start time.Time) (transcript, error) {
	var t transcript
	f, _, err := regfile.Open(path)
	if err != nil {
		return t, fmt.Errorf("read %s: %w", rel, pathErr(err))
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	for n := 1; ; n++ {
		line, err := readLine(r)
		if errors.Is(err, io.EOF) && len(line) == 0 {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			if errors.Is(err, errLongLine) {
				t.skipped = append(t.skipped, Skip{Kind: "jsonl_line", ID: fmt.Sprintf("%s:%d", rel, n), Reason: "longer than 64 MiB"})
				continue
			}
			return t, fmt.Errorf("read %s: %w", rel, err)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", rel, n)
		var jm jsonlMessage
		if line[0] != '{' || json.Unmarshal(line, &jm) != nil {
			t.skipped = append(t.skipped, Skip{Kind: "jsonl_line", ID: where, Reason: "not a JSON message (corrupt line)"})
			continue
		}
		if !validRole(jm.Role) {
			t.skipped = append(t.skipped, Skip{Kind: "jsonl_line", ID: where, Reason: fmt.Sprintf("role %q is not a message role", clip(jm.Role))})
			continue
		}
		m := store.Message{Role: jm.Role, Content: contentText(jm.Content), ToolCallID: jm.ToolCallID,
			ToolName: cmp.Or(jm.ToolName, jm.Name), FinishReason: jm.FinishReason, Active: true,
			Reasoning: cmp.Or(jm.Reasoning, jm.ReasoningContent), Timestamp: jsonTime(jm.Timestamp, start)}
		if jm.Role != store.RoleTool && jm.ToolName == "" {
			m.ToolName = "" // "name" on a user or assistant message is a speaker name, not a tool
		}
		if calls, ok := parseToolCalls(string(jm.ToolCalls)); ok {
			m.ToolCalls = calls
		} else {
			t.notes = append(t.notes, Skip{Kind: "tool_calls", ID: where, Reason: "tool_calls is not a JSON list of calls; stored without them"})
		}
		m.ReasoningDetails = details(string(jm.ReasoningDetails))
		t.messages = append(t.messages, m)
	}
	return t, nil
}

var errLongLine = errors.New("line too long")

// readLine returns the next line without its newline; a line over maxLine is consumed and
// reported as errLongLine.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > maxLine {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			return nil, errLongLine
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(buf, []byte("\n")), err
	}
}

// transcripts lists sessions/<id>.jsonl files by session id. One that is not a regular file (a
// named pipe, whose open would wait for a writer forever, a device, a socket) is left out with
// a Skip of kind "file"; a directory of that name is no transcript and is ignored.
func transcripts(dir string) (map[string]string, []Skip, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", dir, pathErr(err))
	}
	out := map[string]string{}
	var skips []Skip
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		path := filepath.Join(dir, name)
		if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			skips = append(skips, Skip{Kind: "file", ID: "sessions/" + name,
				Reason: (&regfile.NotRegularError{Mode: fi.Mode()}).Error() + "; not read"})
			continue
		}
		out[strings.TrimSuffix(name, ".jsonl")] = path
	}
	return out, skips, nil
}

// contentText turns a message content into text: a string as is, a list of parts as their text
// joined by newlines (when every part is text), anything else as its JSON.
func contentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		texts := make([]string, 0, len(parts))
		for _, p := range parts {
			if p.Text == nil || (p.Type != "" && p.Type != "text" && p.Type != "input_text" && p.Type != "output_text") {
				return string(raw)
			}
			texts = append(texts, *p.Text)
		}
		return strings.Join(texts, "\n")
	}
	return string(raw)
}

// jsonTime reads a line's timestamp (epoch seconds or ISO text), else def.
func jsonTime(raw json.RawMessage, def time.Time) time.Time {
	if len(raw) == 0 {
		return def
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return def
	}
	if f, ok := v.(float64); ok {
		v = f
	}
	if t := epoch(v); !t.IsZero() {
		return t
	}
	return def
}

// sessionStart reads the start time encoded in a reference session id (YYYYMMDD_HHMMSS_...,
// local time), else the file's modification time.
func sessionStart(id, path string) time.Time {
	if len(id) >= 15 {
		if t, err := time.ParseInLocation("20060102_150405", id[:15], time.Local); err == nil {
			return t
		}
	}
	if fi, err := os.Stat(path); err == nil {
		return fi.ModTime()
	}
	return time.Now()
}

func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
