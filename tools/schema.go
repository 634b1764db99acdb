package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// schema is the subset of JSON Schema that tool parameters use. Keywords outside the subset
// (description, default, ...) are kept in the definition sent to the model and ignored here.
type schema struct {
	Type                 string
	Types                []string // when "type" is a list
	Properties           map[string]*schema
	Required             []string
	AdditionalProperties *bool
	Enum                 []any
	Items                *schema
	Minimum, Maximum     *float64
}

func parseSchema(raw json.RawMessage) (*schema, error) {
	var doc struct {
		Type                 json.RawMessage            `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
		Enum                 []any                      `json:"enum"`
		Items                json.RawMessage            `json:"items"`
		Minimum              *float64                   `json:"minimum"`
		Maximum              *float64                   `json:"maximum"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a schema object: %w", err)
	}
	s := &schema{Required: doc.Required, AdditionalProperties: doc.AdditionalProperties,
		Enum: doc.Enum, Minimum: doc.Minimum, Maximum: doc.Maximum}
	if len(doc.Type) > 0 {
		if err := json.Unmarshal(doc.Type, &s.Type); err != nil {
			if err := json.Unmarshal(doc.Type, &s.Types); err != nil {
				return nil, fmt.Errorf("type: want a string or a list of strings")
			}
		}
	}
	for _, t := range append([]string{s.Type}, s.Types...) {
		switch t {
		case "", "object", "string", "integer", "number", "boolean", "array", "null":
		default:
			return nil, fmt.Errorf("unknown type %q", t)
		}
	}
	if len(doc.Properties) > 0 {
		s.Properties = make(map[string]*schema, len(doc.Properties))
		for name, p := range doc.Properties {
			ps, err := parseSchema(p)
			if err != nil {
				return nil, fmt.Errorf("property %s: %w", name, err)
			}
			s.Properties[name] = ps
		}
	}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok {
			return nil, fmt.Errorf("required property %q is not defined", r)
		}
	}
	if len(doc.Items) > 0 {
		is, err := parseSchema(doc.Items)
		if err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
		s.Items = is
	}
	return s, nil
}

// check checks a decoded JSON value (numbers as json.Number) against s and names the first
// offending field; path is the field's location, "" for the whole arguments object.
func (s *schema) check(path string, v any) error {
	at := func() string {
		if path == "" {
			return "arguments"
		}
		return path
	}
	if s.Type != "" || len(s.Types) > 0 {
		types := s.Types
		if s.Type != "" {
			types = []string{s.Type}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
			return fmt.Errorf("%s: want %s, got %s", at(), strings.Join(types, " or "), describe(v))
		}
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return jsonEqual(e, v) }) {
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			b, _ := json.Marshal(e)
			vals[i] = string(b)
		}
		return fmt.Errorf("%s: want one of %s, got %s", at(), strings.Join(vals, ", "), describe(v))
	}
	if n, ok := v.(json.Number); ok {
		f, _ := n.Float64()
		if s.Minimum != nil && f < *s.Minimum {
			return fmt.Errorf("%s: %s is below the minimum %v", at(), n, *s.Minimum)
		}
		if s.Maximum != nil && f > *s.Maximum {
			return fmt.Errorf("%s: %s is above the maximum %v", at(), n, *s.Maximum)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range s.Required {
			if _, ok := x[r]; !ok {
				return fmt.Errorf("%s: missing required property %q", at(), r)
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, ok := s.Properties[k]
			if !ok {
				if s.AdditionalProperties != nil && !*s.AdditionalProperties {
					known := make([]string, 0, len(s.Properties))
					for p := range s.Properties {
						known = append(known, p)
					}
					sort.Strings(known)
					return fmt.Errorf("%s: unknown property %q (known: %s)", at(), k, strings.Join(known, ", "))
				}
				continue
			}
			if err := ps.check(join(path, k), x[k]); err != nil {
				return err
			}
		}
	case []any:
		if s.Items != nil {
			for i, e := range x {
				if err := s.Items.check(fmt.Sprintf("%s[%d]", at(), i), e); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		if _, err := n.Int64(); err == nil {
			return true
		}
		f, err := n.Float64()
		return err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53
	}
	return false
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// describe names a JSON value's kind, with a short excerpt of scalars.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return fmt.Sprintf("string %q", x)
	case json.Number:
		return "number " + x.String()
	}
	return jsonKind(v)
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
