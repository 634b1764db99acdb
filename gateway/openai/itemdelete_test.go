package openai_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/spoolhq/spool/gateway"
	"github.com/spoolhq/spool/provider/fake"
)

// recorder is the fake model over HTTP, keeping the body of every model request.
type recorder struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	h := fake.New(fake.Config{}).Handler()
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		r.mu.Lock()
		r.bodies = append(r.bodies, string(body))
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) last(t *testing.T) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bodies) == 0 {
		t.Fatal("the model was never called")
	}
	return r.bodies[len(r.bodies)-1]
}

// TestConversationItemDelete: DELETE /v1/conversations/{id}/items/{item} through the official
// SDK removes the item from the list and from what the next turn sends to the model, answers
// with the conversation, and is 404 for a missing item and for another principal's
// conversation (which keeps its item).
func TestConversationItemDelete(t *testing.T) {
	t.Parallel()
	up := newRecorder(t)
	home := t.TempDir()
	cfg := fmt.Sprintf("provider:\n  name: openai\n  model: fake-model\n  base_url: %s/v1\n  api_key_env: UPSTREAM_KEY\n"+
		"serve:\n  keys:\n    alice: %s\n    bob: %s\n", up.URL, gateway.HashKey("sk-alice"), gateway.HashKey("sk-bob"))
	s := startServe(t, home, cfg)
	alice := client(s, option.WithAPIKey("sk-alice"))
	bob := client(s, option.WithAPIKey("sk-bob"))

	conv, err := alice.Conversations.New(bg, conversations.ConversationNewParams{Items: []responses.ResponseInputItemUnionParam{
		item("the door code is zebra-4711", responses.EasyInputMessageRoleUser),
		item("noted the door code", responses.EasyInputMessageRoleAssistant),
		item("the budget is small", responses.EasyInputMessageRoleUser),
		item("understood", responses.EasyInputMessageRoleAssistant),
	}})
	if err != nil {
		t.Fatal(err)
	}
	list := func() []string {
		t.Helper()
		l, err := alice.Conversations.Items.List(bg, conv.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range l.Data {
			out = append(out, it.ID+" "+firstText(it.RawJSON()))
		}
		return out
	}
	before := list()
	if len(before) != 4 || !strings.HasSuffix(before[0], "zebra-4711") {
		t.Fatalf("items before: %q", before)
	}
	codeID := strings.Fields(before[0])[0]
	ackID := strings.Fields(before[1])[0]

	// Another principal: 404, and alice's item stays.
	_, err = bob.Conversations.Items.Delete(bg, conv.ID, ackID)
	apiError(t, err, 404, "not_found")
	if got := list(); len(got) != 4 {
		t.Fatalf("bob's delete changed alice's items: %q", got)
	}

	got, err := alice.Conversations.Items.Delete(bg, conv.ID, codeID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != conv.ID || string(got.Object) != "conversation" {
		t.Fatalf("delete answered %s, want the conversation %s", got.RawJSON(), conv.ID)
	}
	after := list()
	if len(after) != 3 || strings.Contains(strings.Join(after, "\n"), "zebra") {
		t.Fatalf("items after the delete: %q", after)
	}
	_, err = alice.Conversations.Items.Get(bg, conv.ID, codeID, conversations.ItemGetParams{})
	apiError(t, err, 404, "not_found")

	// Missing items: deleted already, never existed, not an item id of this conversation.
	for _, id := range []string{codeID, "msg_" + conv.ID + "_999999", "msg_other_1", "nonsense"} {
		_, err = alice.Conversations.Items.Delete(bg, conv.ID, id)
		apiError(t, err, 404, "not_found")
	}

	// The next turn does not send the removed item to the model; the rest is still there.
	r, err := alice.Responses.New(bg, responses.ResponseNewParams{Model: "spool", Input: input("what do you know"),
		Conversation: responses.ResponseNewParamsConversationUnion{OfString: sdk.String(conv.ID)}})
	if err != nil {
		t.Fatal(err)
	}
	wantAnswer(t, r.OutputText(), "what do you know")
	body := up.last(t)
	if strings.Contains(body, "zebra-4711") || !strings.Contains(body, "the budget is small") || !strings.Contains(body, "noted the door code") {
		t.Fatalf("the model's request after the delete:\n%s", body)
	}
}
