package bench

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed workload_vocab.json
var vocabJSON []byte

// Vocab is the fixed vocabulary of the workload. Items are picked by index, so the order of every
// list is part of the workload definition.
type Vocab struct {
	Words       []string   `json:"words"`
	Terms       []string   `json:"terms"`
	Paths       []string   `json:"paths"`
	Errors      []string   `json:"errors"`
	Idents      []string   `json:"idents"`
	Code        []string   `json:"code"`
	Commands    []string   `json:"commands"`
	CJK         []string   `json:"cjk"`
	CJKQueries3 []string   `json:"cjk_queries3"`
	CJKQueries2 []string   `json:"cjk_queries2"`
	Phrases     []string   `json:"phrases"`
	Special     []string   `json:"special"`
	Tools       []ToolSpec `json:"tools"`
	Sources     []string   `json:"sources"`
	Models      []string   `json:"models"`
	pools       map[string][]string
}

// ToolSpec is a tool of the vocabulary: its name, its single argument, and the list its argument
// values are drawn from.
type ToolSpec struct {
	Name string `json:"name"`
	Arg  string `json:"arg"`
	Pool string `json:"pool"`
}

// DefaultVocab parses the embedded vocabulary.
func DefaultVocab() (*Vocab, error) { return ParseVocab(vocabJSON) }

// ParseVocab parses a vocabulary file and checks that every list the generator draws from is
// non-empty and every tool names an existing pool.
func ParseVocab(data []byte) (*Vocab, error) {
	var v Vocab
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("parse workload vocabulary: %w", err)
	}
	v.pools = map[string][]string{
		"words": v.Words, "terms": v.Terms, "paths": v.Paths, "errors": v.Errors,
		"idents": v.Idents, "code": v.Code, "commands": v.Commands, "cjk": v.CJK,
		"cjk_queries3": v.CJKQueries3, "cjk_queries2": v.CJKQueries2, "phrases": v.Phrases,
		"special": v.Special, "sources": v.Sources, "models": v.Models,
	}
	for name, list := range v.pools {
		if len(list) == 0 {
			return nil, fmt.Errorf("workload vocabulary: list %q is missing or empty", name)
		}
	}
	if len(v.Tools) == 0 {
		return nil, fmt.Errorf("workload vocabulary: list %q is missing or empty", "tools")
	}
	for _, t := range v.Tools {
		if _, ok := v.pools[t.Pool]; !ok {
			return nil, fmt.Errorf("workload vocabulary: tool %q draws from unknown pool %q", t.Name, t.Pool)
		}
	}
	return &v, nil
}
