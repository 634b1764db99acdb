package sqlite

import (
	"bytes"
	"container/list"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/spoolhq/spool/store"
)

// historyCache keeps the active histories the store loaded, so the next load of a session reads
// only what was appended since (every gateway turn loads its conversation, which its previous
// turn extended by two rows). An entry is only ever used after a check, in the same read
// transaction as the rows it adds, that proves it still holds (see rawReader.loadActive):
//   - the session's history_changes (migration 0012: every update or delete of one of its
//     message rows, and an active row inserted below its newest active one, count one, by
//     triggers, in whatever process writes) is the entry's, so no row the entry holds changed or
//     went away, and every active row added since has a larger id than the entry's last;
//   - the entry's last row is still the session's active row of that id (ids are never reused:
//     a session deleted and made again under the same id does not pass);
//   - the session's message_count is the entry's rows plus the rows read after its last.
//
// Then the active history is the entry's rows followed by the active rows after its last id,
// read by the same code as a full load, so it is what a full load returns. Entries are never
// modified once stored (a load that extends one stores a new slice), and each caller gets its
// own copy. The cache is bounded by an estimate of the bytes it holds, least recently used out.
type historyCache struct {
	// extended counts the loads an entry served (with the rows appended after it), loaded the
	// loads that read the whole history.
	extended, loaded atomic.Int64

	mu    sync.Mutex
	limit int
	size  int
	lru   *list.List // of *historyEntry, most recently used first
	byID  map[string]*list.Element
}

type historyEntry struct {
	session string
	changes int64
	msgs    []store.Message
	size    int
}

// defaultHistoryCacheBytes bounds the cache when Options.HistoryCacheBytes is zero.
const defaultHistoryCacheBytes = 64 << 20

func newHistoryCache(limit int) *historyCache {
	if limit < 0 {
		return nil
	}
	if limit == 0 {
		limit = defaultHistoryCacheBytes
	}
	return &historyCache{limit: limit, lru: list.New(), byID: map[string]*list.Element{}}
}

// get returns the session's entry, nil when there is none.
func (c *historyCache) get(session string) *historyEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[session]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*historyEntry)
}

// put stores msgs (which the cache then owns) as the session's history at changes.
func (c *historyCache) put(session string, changes int64, msgs []store.Message) {
	e := &historyEntry{session: session, changes: changes, msgs: msgs, size: historySize(msgs)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[session]; ok {
		c.size -= el.Value.(*historyEntry).size
		c.lru.Remove(el)
		delete(c.byID, session)
	}
	if e.size > c.limit {
		return
	}
	c.byID[session] = c.lru.PushFront(e)
	c.size += e.size
	for c.size > c.limit {
		old := c.lru.Back()
		oe := old.Value.(*historyEntry)
		c.lru.Remove(old)
		delete(c.byID, oe.session)
		c.size -= oe.size
	}
}

// drop forgets the session.
func (c *historyCache) drop(session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[session]; ok {
		c.size -= el.Value.(*historyEntry).size
		c.lru.Remove(el)
		delete(c.byID, session)
	}
}

// historySize estimates the bytes msgs hold.
func historySize(msgs []store.Message) int {
	n := cap(msgs) * int(unsafe.Sizeof(store.Message{}))
	for _, m := range msgs {
		n += len(m.Content) + len(m.APIContent) + len(m.ToolCallID) + len(m.Reasoning) + len(m.ReasoningDetails)
		for _, c := range m.ToolCalls {
			n += int(unsafe.Sizeof(c)) + len(c.ID) + len(c.Function.Name) + len(c.Function.Arguments)
		}
	}
	return n
}

// callerCopy is msgs for a caller, who may modify it: its own slice (with room for the turn the
// loader is about to add), its own tool calls and reasoning details; the strings are immutable.
func callerCopy(msgs []store.Message) []store.Message {
	out := make([]store.Message, len(msgs), len(msgs)+turnRoom)
	copy(out, msgs)
	for i := range out {
		if out[i].ToolCalls != nil {
			out[i].ToolCalls = slices.Clone(out[i].ToolCalls)
		}
		if out[i].ReasoningDetails != nil {
			out[i].ReasoningDetails = bytes.Clone(out[i].ReasoningDetails)
		}
	}
	return out
}
