// Package pgtest gives tests a fresh PostgreSQL database of their own. The server is named by
// SPOOL_TEST_POSTGRES_DSN (a URL whose user may create databases, e.g.
// postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable; .ci/run starts one). Without it
// a test is skipped with the reason and how to enable it, except under CI=true, where it fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the server tests run against.
const EnvDSN = "SPOOL_TEST_POSTGRES_DSN"

// AdminDSN returns the server URL, or skips (fails under CI=true) when none is configured.
func AdminDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		msg := "no PostgreSQL server: set " + EnvDSN + "=postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable " +
			"(a server whose user may CREATE DATABASE; .ci/run shows how to start one)"
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return dsn
}

// NewDatabase creates an empty database (UTF-8, LC_CTYPE C.UTF-8, as spool needs for CJK
// search) and returns its URL; it is dropped when the test ends.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	admin := AdminDSN(tb)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "spooltest_" + hex.EncodeToString(b[:])
	if err := exec(admin, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE template0 ENCODING 'UTF8'
		LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'`, name)); err != nil {
		tb.Fatalf("create test database: %v", err)
	}
	tb.Cleanup(func() {
		if err := exec(admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Logf("drop test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		tb.Fatalf("%s is not a URL: %v", EnvDSN, err)
	}
	u.Path = "/" + name
	return u.String()
}

func exec(dsn, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// Restore runs a plain-SQL pg_dump file (one written with --inserts) into the database at dsn.
// psql's meta-commands in it (\restrict, \unrestrict: lines starting with a backslash) are
// skipped; the rest runs as one multi-statement query.
func Restore(tb testing.TB, dsn, dumpPath string) {
	tb.Helper()
	b, err := os.ReadFile(dumpPath)
	if err != nil {
		tb.Fatal(err)
	}
	var sql strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasPrefix(line, `\`) {
			sql.WriteString(line)
		}
	}
	if err := exec(dsn, sql.String()); err != nil {
		tb.Fatalf("restore %s: %v", dumpPath, err)
	}
}
