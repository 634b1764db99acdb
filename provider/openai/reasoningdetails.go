package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// detailsAssembler accumulates OpenRouter's reasoning_details from streamed Chat Completions
// deltas. Each delta carries fragments of items; fragments with the same "index" belong to one
// item (a fragment without an index starts an item of its own). The string fields that stream
// in pieces (text, summary, data) are concatenated; any other field keeps its first non-null
// value (a signature arrives once, on the last fragment). Keys keep the order they first
// appeared in. The result is compact JSON with HTML characters escaped, exactly what the
// request encoder emits for it, so the stored bytes are the bytes replayed on later requests.
type detailsAssembler struct {
	items   []*detailItem
	byIndex map[string]int
}

type detailItem struct {
	keys   []string
	values map[string]json.RawMessage
	text   map[string]*bytes.Buffer // concatenated string fields
}

// streamedFields are the reasoning_details fields that arrive in pieces.
var streamedFields = map[string]bool{"text": true, "summary": true, "data": true}

// add merges one delta's reasoning_details array; a malformed one is an error.
func (a *detailsAssembler) add(raw string) error {
	var frags []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &frags); err != nil {
		return fmt.Errorf("reasoning_details is not an array of objects: %w", err)
	}
	if a.byIndex == nil {
		a.byIndex = map[string]int{}
	}
	for _, f := range frags {
		keys, vals, err := orderedObject(f)
		if err != nil {
			return fmt.Errorf("reasoning_details item: %w", err)
		}
		var it *detailItem
		if idx, ok := vals["index"]; ok && string(idx) != "null" {
			if i, seen := a.byIndex[string(idx)]; seen {
				it = a.items[i]
			} else {
				a.byIndex[string(idx)] = len(a.items)
			}
		}
		if it == nil {
			it = &detailItem{values: map[string]json.RawMessage{}, text: map[string]*bytes.Buffer{}}
			a.items = append(a.items, it)
		}
		for _, k := range keys {
			v := vals[k]
			_, had := it.values[k]
			if !had {
				it.keys = append(it.keys, k)
			}
			var s string
			if streamedFields[k] && json.Unmarshal(v, &s) == nil {
				if it.text[k] == nil {
					it.text[k] = &bytes.Buffer{}
				}
				it.text[k].WriteString(s)
				it.values[k] = nil
				continue
			}
			if !had || string(it.values[k]) == "null" {
				it.values[k] = v
			}
		}
	}
	return nil
}

// bytes is the assembled JSON array, nil when nothing arrived.
func (a *detailsAssembler) bytes() (json.RawMessage, error) {
	if len(a.items) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, it := range a.items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		for j, k := range it.keys {
			if j > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			if t := it.text[k]; t != nil {
				vb, err := json.Marshal(t.String())
				if err != nil {
					return nil, err
				}
				b.Write(vb)
			} else {
				b.Write(it.values[k])
			}
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	var compact bytes.Buffer
	if err := json.Compact(&compact, b.Bytes()); err != nil {
		return nil, fmt.Errorf("assemble reasoning_details: %w", err)
	}
	var out bytes.Buffer
	json.HTMLEscape(&out, compact.Bytes())
	return out.Bytes(), nil
}

// orderedObject reads one JSON object: its keys in order and their raw values.
func orderedObject(raw json.RawMessage) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("not an object")
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, ok := t.(string)
		if !ok {
			return nil, nil, fmt.Errorf("not an object")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := vals[k]; !dup {
			keys = append(keys, k)
		}
		vals[k] = v
	}
	return keys, vals, nil
}
