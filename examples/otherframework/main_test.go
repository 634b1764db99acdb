package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/spoolhq/spool/provider/fake"
)

// The framework's hook compacts through spool (committed), the fact planted early leaves the
// framework's context, and session_search still finds it among the archived messages.
func TestOtherFrameworkRecallsWhatWasCompacted(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), &out, fake.New(fake.Config{})); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := regexp.MustCompile(`(?s)^compacted \d+ messages .*` +
		`session_search found the compacted fact: true\nthe framework's context holds it: false\n$`)
	if !want.Match(out.Bytes()) {
		t.Fatalf("output:\n%s", out.String())
	}
}
