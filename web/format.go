package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/store"
)

// baseData is what every page's layout needs.
type baseData struct {
	Title  string
	Prefix string
	CSRF   string
	Nav    string // which top-level page is current
	Query  string // the search box's text
	// SignOut is the sign-out page's path, "" when there is nothing to sign out of.
	SignOut string
}

// itoa formats a row id.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func (s *Server) base(r *http.Request, v viewer, title string) baseData {
	return baseData{Title: title, Prefix: s.opts.Prefix, CSRF: v.csrf, SignOut: s.opts.SignOut}
}

// relTime says how long ago t was, in one unit ("3 min ago").
func relTime(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	case d < 60*24*time.Hour:
		return fmt.Sprintf("%d days ago", int(d/(24*time.Hour)))
	}
	return t.UTC().Format("2006-01-02")
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// num formats an integer with thousands separators.
func num(v any) string {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	default:
		return fmt.Sprint(v)
	}
	neg := n < 0
	if neg {
		n = -n
	}
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func usd(f float64) string {
	switch {
	case f == 0:
		return "$0"
	case f < 0.01:
		return fmt.Sprintf("$%.4f", f)
	}
	return fmt.Sprintf("$%.2f", f)
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }

// cachedShare is the share of prompt tokens read from the provider's cache (input tokens count
// cached ones too).
func cachedShare(u store.Usage) float64 {
	if u.InputTokens <= 0 {
		return 0
	}
	return float64(u.CacheReadTokens) / float64(u.InputTokens)
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:max(n-1, 1)]) + "…"
}

func queryString(kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// explainBreak says in words which layer of a request changed first and why.
func explainBreak(b *store.CacheBreak) string {
	if b == nil {
		return ""
	}
	var where string
	switch {
	case b.Layer == "model":
		where = "the model"
	case b.Layer == "tools":
		where = "the tool schemas"
	case b.Layer == "system":
		where = "the system prompt"
	case strings.HasPrefix(b.Layer, "system."):
		tier := strings.TrimPrefix(b.Layer, "system.")
		if name, ok := map[string]string{"0": "stable", "1": "context", "2": "volatile"}[tier]; ok {
			tier = name
		}
		where = fmt.Sprintf("the system prompt's %s tier", tier)
	case b.Layer == "none":
		where = "no layer (the bytes sent were the same)"
	case b.Layer == "messages":
		where = fmt.Sprintf("message %d of the request", b.Index)
	default:
		where = b.Layer
	}
	why := map[string]string{
		"compaction": "a compaction rewrote the history",
		"tools":      "the tool set changed",
		"ttl":        "the provider's cache expired (idle longer than its TTL)",
		"resume":     "the session was resumed by a new process",
		"edit":       "earlier bytes were edited",
		"model":      "the model changed",
		"unknown":    "nothing changed that spool can see: the provider evicted its cache",
	}[b.Reason]
	if why == "" {
		why = "no known cause (" + b.Reason + ")"
	}
	return fmt.Sprintf("first change at %s: %s; %s cached tokens lost", where, why, num(b.LostTokens))
}

// latency shows a model call's wall time; "-" when it was not measured.
func latency(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
