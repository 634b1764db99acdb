package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/spoolhq/spool/store"
)

func testRoutes(t *testing.T, h Harness) {
	st, dsn := h.open(t)
	mustCreate(t, st, store.NewSession{ID: "r1", Source: "telegram"})
	mustCreate(t, st, store.NewSession{ID: "r2", Source: "telegram"})
	const key = "agent:main:telegram:dm:123456789"

	_, err := st.GetRoute(bg, key)
	wantErr(t, err, store.ErrNotFound, "route never put")

	at := time.Date(2026, 4, 3, 8, 5, 0, 0, time.UTC)
	want := store.Route{Key: key, SessionID: "r1", Suspended: true, Origin: json.RawMessage(`{"platform":"telegram","display_name":"Alice"}`), UpdatedAt: at}
	if err := st.PutRoute(bg, want); err != nil {
		t.Fatal(err)
	}
	got, err := h.reopen(t, dsn).GetRoute(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	if got.SessionID != "r1" || !got.Suspended || got.ResumePending || !got.UpdatedAt.Equal(at) || !jsonEqual(got.Origin, want.Origin) {
		t.Fatalf("route read back = %+v, want %+v", got, want)
	}

	// Putting the key again moves it.
	if err := st.PutRoute(bg, store.Route{Key: key, SessionID: "r2", ResumePending: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.GetRoute(bg, key); got.SessionID != "r2" || got.Suspended || !got.ResumePending || got.Origin != nil || got.UpdatedAt.IsZero() {
		t.Fatalf("replaced route = %+v", got)
	}

	for _, bad := range []store.Route{
		{Key: "", SessionID: "r1"},
		{Key: "/leading", SessionID: "r1"},
		{Key: "k", SessionID: ""},
		{Key: "k", SessionID: "r1", Origin: json.RawMessage(`[1]`)},
	} {
		wantErr(t, st.PutRoute(bg, bad), store.ErrInvalid, "bad route "+bad.Key)
	}
	wantErr(t, st.PutRoute(bg, store.Route{Key: "k", SessionID: "missing"}), store.ErrNotFound, "route to a missing session")

	// RoutesTo lists a session's bindings by key; none for a session nothing points at.
	const key2 = "agent:main:slack:thread:T1:C1:1712.5"
	if err := st.PutRoute(bg, store.Route{Key: key2, SessionID: "r2", Origin: json.RawMessage(`{"platform":"slack"}`)}); err != nil {
		t.Fatal(err)
	}
	to, err := h.reopen(t, dsn).RoutesTo(bg, "r2")
	if err != nil {
		t.Fatal(err)
	}
	if len(to) != 2 || to[0].Key != key2 || to[1].Key != key || to[0].SessionID != "r2" || !jsonEqual(to[0].Origin, json.RawMessage(`{"platform":"slack"}`)) || !to[1].ResumePending || to[1].UpdatedAt.IsZero() {
		t.Fatalf("RoutesTo(r2) = %+v", to)
	}
	if to, err := st.RoutesTo(bg, "r1"); err != nil || len(to) != 0 {
		t.Fatalf("RoutesTo(r1) = %+v, %v", to, err)
	}

	// A deleted session takes its routes with it.
	if err := st.DeleteSession(bg, "r2"); err != nil {
		t.Fatal(err)
	}
	_, err = st.GetRoute(bg, key)
	wantErr(t, err, store.ErrNotFound, "route of a deleted session")
	expectHealthy(t, st)
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
