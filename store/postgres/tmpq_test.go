package postgres_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/spoolhq/spool/bench"
)

func TestTmpDumpQueries(t *testing.T) {
	out := os.Getenv("S6_DUMP_Q")
	if out == "" {
		t.Skip()
	}
	v, _ := bench.DefaultVocab()
	qs := bench.NewGenerator(v).Queries(20260428+1, 500)
	b, _ := json.Marshal(qs)
	os.WriteFile(out, b, 0o644)
}
