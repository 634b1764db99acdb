package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/spoolhq/spool"
	"github.com/spoolhq/spool/provider/fake"
)

// The program keeps the history of a two-input chat with the offline model over HTTP: both
// answers printed, all four messages stored.
func TestChatHistoryOnTheOfflineModel(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(fake.New(fake.Config{}).Handler())
	defer srv.Close()
	var out bytes.Buffer
	m := chatModel{baseURL: srv.URL + "/v1", model: "fake"}
	if err := run(context.Background(), &out, m, spool.Memory, []string{"SAY hello", "SAY again"}); err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^> SAY hello\nhello\n> SAY again\nagain\nsession \S+ holds 4 messages\n$`)
	if !want.Match(out.Bytes()) {
		t.Fatalf("output:\n%s", out.String())
	}
}
