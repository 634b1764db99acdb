package store

import "fmt"

// HideRow is what HideSet needs to know of one shown message row (active or archived).
type HideRow struct {
	ID         int64
	CopyOf     int64 // 0 when the row is no compaction copy
	Role       string
	Summary    bool
	ToolCallID string
	CallIDs    []string // ids of the row's tool calls
}

// HideSet picks the rows HideMessage hides for message id, given the session's shown rows in
// id order: the message, every compaction copy of it (or the original it copies), and, for an
// assistant message with tool calls, the tool results that answer those calls (the tool rows
// right after each of its rows), so the model's view never keeps a call without its result or
// a result without its call. A missing id is ErrNotFound; a summary or a tool result alone is
// an *InvalidError. Backends call it so both hide the same rows.
func HideSet(rows []HideRow, id int64) ([]int64, error) {
	at := -1
	for i, r := range rows {
		if r.ID == id {
			at = i
			break
		}
	}
	if at < 0 {
		return nil, fmt.Errorf("message %d: %w", id, ErrNotFound)
	}
	switch r := rows[at]; {
	case r.Summary:
		return nil, Invalid("message", "message %d is a compaction summary; it cannot be removed alone", id)
	case r.Role == RoleTool:
		return nil, Invalid("message", "message %d is a tool result; remove the assistant message that called it", id)
	}
	group := rows[at].CopyOf
	if group == 0 {
		group = id
	}
	var out []int64
	for i, r := range rows {
		if r.ID != group && r.CopyOf != group {
			continue
		}
		out = append(out, r.ID)
		if len(r.CallIDs) == 0 {
			continue
		}
		calls := make(map[string]bool, len(r.CallIDs))
		for _, c := range r.CallIDs {
			calls[c] = true
		}
		for _, t := range rows[i+1:] {
			if t.Role != RoleTool {
				break
			}
			if calls[t.ToolCallID] {
				out = append(out, t.ID)
			}
		}
	}
	return out, nil
}

// RowScanner is what HideRows reads from: *sql.Rows and pgx.Rows both are one.
type RowScanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// HideRows reads the shown rows of a session for HideSet, each as (id, copy_of or 0, role,
// summary, tool_call_id or ”, tool_calls JSON or ”). The caller closes rows.
func HideRows(rows RowScanner) ([]HideRow, error) {
	var shown []HideRow
	for rows.Next() {
		var r HideRow
		var calls string
		if err := rows.Scan(&r.ID, &r.CopyOf, &r.Role, &r.Summary, &r.ToolCallID, &calls); err != nil {
			return nil, err
		}
		if calls != "" {
			cs, err := DecodeToolCalls(calls)
			if err != nil {
				return nil, fmt.Errorf("tool calls of message %d: %w", r.ID, err)
			}
			for _, c := range cs {
				r.CallIDs = append(r.CallIDs, c.ID)
			}
		}
		shown = append(shown, r)
	}
	return shown, rows.Err()
}
