package postgres

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/store/postgres/pgtest"
)

// BenchmarkAppend is one message per transaction, the W1 hot path. Point
// SPOOL_TEST_POSTGRES_DSN at a cluster with fsync=on to see the durable cost.
func BenchmarkAppend(b *testing.B) {
	db, err := Open(bg, pgtest.NewDatabase(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for i := range 20 {
		if _, err := db.CreateSession(bg, store.NewSession{ID: fmt.Sprint("s", i)}); err != nil {
			b.Fatal(err)
		}
	}
	text := strings.Repeat("the quick brown fox jumps over the lazy dog while reading src/main.go ", 8)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Append(bg, fmt.Sprint("s", i%20), store.Message{Role: store.RoleUser, Content: fmt.Sprint(text, i)}); err != nil {
			b.Fatal(err)
		}
	}
}
