package compress

// DefaultTargetFill is the share of the room between the fixed part of a request (system
// prompt, tool schemas) and the trigger that the conversation may fill right after a
// compaction: 0.5 halves it, so a compaction buys as many turns as the first stretch did.
const DefaultTargetFill = 0.5

// minRoom is the least a compaction plans for the messages, in tokens, when the fixed part of
// the request alone is near the trigger: the newest exchange and a pointer still fit.
const minRoom = 256

// Shares of the room (Budgets.Room) given to each part of a compacted history. They sum to
// less than 1: the summary's prefix and end marker and estimation slack take the rest. At large
// windows the reference caps bind first (10,000 summary tokens, MaxLedgerChars, the lean tail's
// 25,000), so a 1M-token window keeps today's rich summary; at small ones the shares do.
const (
	headShare    = 0.15
	tailShare    = 0.45
	summaryShare = 0.22
	ledgerShare  = 0.12
	// Under smallRoom tokens a summary says little, and the ledger's pointers are what keeps
	// the compacted turns reachable: the ledger takes part of the summary's share.
	smallRoom         = 4_000
	smallSummaryShare = 0.14
	smallLedgerShare  = 0.20
)

// Budgets are the sizes of one compaction, all derived from the model's window, the trigger
// and the fixed part of the request. Every rung of the ladder (see ladder.go) is measured
// against Target.
type Budgets struct {
	// Target is the whole request (fixed part plus messages) a compaction must reach, in tokens.
	Target int
	// Fixed is the request outside the messages (system prompt, tool schemas), as the caller
	// estimated it (Request.FixedTokens).
	Fixed int
	// Room is Target − Fixed: what the messages may take.
	Room int
	// Head is how many tokens the protected first messages may take (first compaction only).
	Head int
	// Tail and TailSoft size the verbatim tail (the tail cut's budget and soft ceiling).
	Tail, TailSoft int
	// Summary is the summary body's budget in tokens (asked for in the prompt, enforced after).
	Summary int
	// LedgerChars bounds the rendered working-set ledger; AskChars the verbatim user messages
	// quoted in it (lean tail mode; 0 in legacy mode).
	LedgerChars, AskChars int
}

func (c Config) targetFill() float64 {
	f := c.TargetFill
	if f <= 0 {
		f = DefaultTargetFill
	}
	return min(max(f, 0.1), 0.9)
}

// Target is the whole-request size a compaction must reach when the fixed part of the request
// is fixed tokens: fixed plus TargetFill of the room left under the trigger.
func (r Resolution) Target(cfg Config, fixed int) int {
	fixed = max(fixed, 0)
	room := int(float64(r.Tokens-fixed) * cfg.targetFill())
	return fixed + max(room, minRoom)
}

// NewBudgets derives the budgets of a compaction from the resolved trigger, the configuration
// and the fixed part of the request.
func NewBudgets(cfg Config, r Resolution, fixed int) Budgets {
	fixed = max(fixed, 0)
	b := Budgets{Target: r.Target(cfg, fixed), Fixed: fixed}
	b.Room = b.Target - fixed
	room := float64(b.Room)
	b.Head = int(room * headShare)
	tailCap := int(room * tailShare)
	b.Tail = min(r.TailBudget, tailCap)
	b.TailSoft = min(max(r.TailSoftCeiling, b.Tail), tailCap)
	sumShare, ledShare := summaryShare, ledgerShare
	if b.Room < smallRoom {
		sumShare, ledShare = smallSummaryShare, smallLedgerShare
	}
	b.Summary = min(r.MaxSummaryTokens, int(room*sumShare))
	if r.MaxSummaryTokens <= 0 { // a hand-built Resolution
		b.Summary = int(room * sumShare)
	}
	b.Summary = max(b.Summary, 64)
	b.LedgerChars = min(MaxLedgerChars, int(room*ledShare)*4)
	if cfg.tailMode() != TailLegacy {
		asks := cfg.UserAsksBudget
		if asks <= 0 {
			asks = DefaultConfig().UserAsksBudget
		}
		b.AskChars = min(asks, b.LedgerChars/4)
	}
	return b
}

// summaryBudgetFor is the summary's token budget for contentTokens of turns (a
// fifth of the content, at least 2,000, at most the ceiling), here never above the ceiling
// the window allows: a 4K window cannot hold a 2,000-token summary.
func summaryBudgetFor(contentTokens, ceiling int) int {
	return min(max(min(2000, ceiling), int(float64(contentTokens)*0.20)), ceiling)
}
