package compress

import (
	"strings"
	"testing"
)

func TestClassifyDirective(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sentence string
		want     Directive
	}{
		// Constraints.
		{"Never use sudo in any script or command.", DirectiveConstraint},
		{"Always run go test -race before committing.", DirectiveConstraint},
		{"Amounts are int64 cents everywhere, never float64.", DirectiveConstraint},
		{"Do not change the exported API of package ledger.", DirectiveConstraint},
		{"don't push to main", DirectiveConstraint},
		{"Please don’t touch the vendor directory.", DirectiveConstraint},
		{"Use pgx, not lib/pq.", DirectiveConstraint},
		{"Use table-driven tests, not one test function per case.", DirectiveConstraint},
		{"We use slog instead of logrus.", DirectiveConstraint},
		{"Stop adding TODO comments to the code.", DirectiveConstraint},
		{"Make sure every new endpoint checks the merchant id.", DirectiveConstraint},
		{"Migrations must stay backwards compatible: no column drops.", DirectiveConstraint},
		{"From now on, log with slog.", DirectiveConstraint},
		{"We should avoid new dependencies.", DirectiveConstraint},
		{"Keep the commit focused.", DirectiveConstraint},
		{"Only touch files under internal/.", DirectiveConstraint},
		{"OK, use the fake clock in tests rather than time.Sleep.", DirectiveConstraint},
		{"We never deploy on Fridays.", DirectiveConstraint},
		// Corrections.
		{"No, use errors.Is here, not string comparison.", DirectiveCorrection},
		{"Actually, the port is 5433.", DirectiveCorrection},
		{"That's wrong: the limit is per merchant.", DirectiveCorrection},
		{"I said the config is TOML.", DirectiveCorrection},
		{"I told you to leave the migrations alone.", DirectiveCorrection},
		{"That is not what I asked for.", DirectiveCorrection},
		// Decisions.
		{"Let's use sqlite.", DirectiveDecision},
		{"We decided to use pgx for the database layer.", DirectiveDecision},
		{"Goal (LEDG-412): make refunds idempotent.", DirectiveDecision},
		{"Remember to update the changelog.", DirectiveDecision},
		// Nothing binding.
		{"I never saw that error?", DirectiveNone},
		{"I never saw that error.", DirectiveNone},
		{"It always fails on the second run.", DirectiveNone},
		{"Should we never retry?", DirectiveNone},
		{"Why don't we use pgx?", DirectiveNone},
		{"Can you make sure the tests pass?", DirectiveNone},
		{"I don't know why the build broke.", DirectiveNone},
		{"I don't think the cache is involved.", DirectiveNone},
		{"It must be the cache.", DirectiveNone},
		{"The deploy must have failed overnight.", DirectiveNone},
		{"Task 12: add a retry with jitter to the outbox worker in internal/outbox/worker_12.go.", DirectiveNone},
		{"The sky is blue!", DirectiveNone},
		{"No.", DirectiveNone},
		{"No problem.", DirectiveNone},
		{"Production logs show: dial tcp 10.0.3.17:5432: connect: connection refused", DirectiveNone},
		{"The user interface uses tabs.", DirectiveNone},
		{"", DirectiveNone},
	}
	for _, tt := range tests {
		if got := ClassifyDirective(tt.sentence); got != tt.want {
			t.Errorf("ClassifyDirective(%q) = %s, want %s", tt.sentence, got, tt.want)
		}
	}
}

func TestDirectives(t *testing.T) {
	t.Parallel()
	got := Directives("Hi there. Let's use sqlite. The sky is blue! I never saw that error? We must never break the API; also, don't push to main\nUse Go 1.26 instead of 1.25.", 10)
	want := []string{"Let's use sqlite.", "We must never break the API;", "also, don't push to main", "Use Go 1.26 instead of 1.25."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if got := Directives("Never do A. Never do B. Never do C.", 2); len(got) != 2 {
		t.Fatalf("limit 2: got %q", got)
	}
}
