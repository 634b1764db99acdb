package config

import (
	"cmp"
	"time"
)

// FileName is the config file's name inside the spool home.
const FileName = "config.yaml"

// Config is spool's whole configuration. Field tags name the YAML keys; the environment variable
// of a key is SPOOL_ plus the key upper-cased with dots turned into underscores.
type Config struct {
	// Home is the spool home directory every relative path is resolved against.
	Home string `yaml:"-"`
	// File is the config file that was read, "" when there was none.
	File string `yaml:"-"`
	// ProjectFile is the project's .spool/config.yaml that LoadProject merged, "" when none.
	ProjectFile string `yaml:"-"`
	// Warnings are problems Load tolerated: a SPOOL_<SECTION>_... variable that names no setting
	// (a typo: it is ignored). Variables outside the config sections (SPOOL_HOME, other tools')
	// are not warned about. Callers print them.
	Warnings []string `yaml:"-"`

	Database    Database    `yaml:"database"`
	Provider    Provider    `yaml:"provider"`
	Compression Compression `yaml:"compression"`
	Auxiliary   Auxiliary   `yaml:"auxiliary"`
	Sessions    Sessions    `yaml:"sessions"`
	Leases      Leases      `yaml:"leases"`
	Serve       Serve       `yaml:"serve"`
	MCP         MCP         `yaml:"mcp"`
	Tools       Tools       `yaml:"tools"`
	Delegation  Delegation  `yaml:"delegation"`
	Recall      Recall      `yaml:"recall"`
	Platforms   Platforms   `yaml:"platforms"`
}

// Tools configures what the programs spool's tools start may see.
type Tools struct {
	// Env names the environment variables, besides the base list (PATH, HOME, LANG, LC_*, TERM,
	// USER, LOGNAME, SHELL, TMPDIR, TZ), that terminal commands and MCP stdio servers inherit
	// from spool; a name ending in * is a prefix (GO*). Nothing else of spool's environment
	// reaches them: provider keys, SPOOL_DATABASE_URL, platform tokens. Set in the config file
	// only.
	Env []string `yaml:"env"`
}

// Recall configures session_search.
type Recall struct {
	// Detail is the detail session_search uses when the model names none: adaptive (the raw
	// matching windows, no model call) or summary (each top session summarized for the query by
	// the auxiliary compression model, else the main model).
	Detail string `yaml:"detail" enum:"adaptive,summary"`
}

// Delegation configures the delegate tool of `spool run` and `spool chat` (sub-agents that work
// in child sessions).
type Delegation struct {
	// MaxDepth is how deep delegations nest: 1 lets the agent delegate while its sub-agents
	// cannot, 2 lets them delegate once more; 0 turns the delegate tool off.
	MaxDepth int `yaml:"max_depth" min:"0"`
	// MaxParallel bounds the delegations of one model response that run at once.
	MaxParallel int `yaml:"max_parallel" min:"1"`
}

// MCP configures Model Context Protocol servers, whose tools join the built-in ones (package
// tools/mcp) in `spool run` and `spool chat`.
type MCP struct {
	// Servers are the MCP servers, each a stdio command or a streamable HTTP URL. They are set
	// in the config file only (no environment variable).
	Servers []MCPServer `yaml:"servers"`
	// ConnectTimeout bounds starting a server and listing its tools.
	ConnectTimeout time.Duration `yaml:"connect_timeout" min:"1"`
	// CallTimeout bounds one tool call; a server that does not answer in time is stopped.
	CallTimeout time.Duration `yaml:"call_timeout" min:"1"`
	// MaxRestarts is how often a server that died or hung is restarted before it is failed.
	MaxRestarts int `yaml:"max_restarts" min:"0"`
	// ProjectServers lets a project's .spool/config.yaml (ProjectFile) add MCP servers. Off by
	// default: a cloned repository must not start programs on its own.
	ProjectServers bool `yaml:"project_servers"`
}

// MCPServer is one MCP server. Exactly one of Command and URL is set.
type MCPServer struct {
	// Name namespaces the server's tools: mcp__<name>__<tool>.
	Name string `yaml:"name"`
	// Command is the argv of a stdio server.
	Command []string `yaml:"command"`
	// Env is added to the command's environment, which never holds spool's own secrets.
	Env map[string]string `yaml:"env"`
	// URL is a streamable HTTP endpoint.
	URL string `yaml:"url"`
}

// Database configures the session store.
type Database struct {
	// Path of the SQLite file; relative paths are relative to Home.
	Path string `yaml:"path"`
	// URL, when set (postgres://user:pass@host:5432/db?sslmode=...), selects the PostgreSQL
	// backend instead of the SQLite file; Path, Synchronous and JournalMode are then unused.
	// SPOOL_DATABASE_URL keeps a password out of the file.
	URL string `yaml:"url"`
	// Synchronous is "normal" (WAL default: a commit survives a process crash, the last few may
	// be lost on power loss) or "full" (fsync on every commit).
	Synchronous string `yaml:"synchronous" enum:"normal,full"`
	// JournalMode is "wal" or "delete" (rollback journal, for filesystems where WAL is unsafe).
	JournalMode string `yaml:"journal_mode" enum:"wal,delete"`
	// WriteTimeout bounds how long any write waits for the database: SQLite's write lock held
	// by another process, a row another PostgreSQL transaction holds (the connections'
	// lock_timeout), or a PostgreSQL server that dropped or refused the connection. Past it the
	// command fails with one line saying what it waited for.
	WriteTimeout time.Duration `yaml:"write_timeout" min:"1"`
}

// Provider selects the main model. An empty Name means the offline in-process model.
type Provider struct {
	Name    string `yaml:"name" enum:",openai,anthropic,fake"`
	Model   string `yaml:"model"`
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable holding the API key; the key itself never lives
	// in the config file. Empty means the provider's usual variable (see KeyEnv).
	APIKeyEnv string `yaml:"api_key_env"`
	// CacheTTL is the prompt-cache lifetime asked of Anthropic: "5m" (the default) or "1h",
	// which costs more to write but survives pauses longer than five minutes.
	CacheTTL string `yaml:"cache_ttl" enum:",5m,1h"`
	// ContextLength is the model's window in tokens; 0 looks the model up in the table of known
	// models (128,000 for a model it does not know). --context-length overrides it.
	ContextLength int `yaml:"context_length" min:"0"`
	// API is the wire API for provider openai: "chat" (Chat Completions, the default) or
	// "responses" (the Responses API, stateless, with reasoning items replayed each turn).
	API string `yaml:"api" enum:",chat,responses"`
	// Fallbacks are tried in order when the main model fails with a class that will not clear
	// by retrying (provider.Class.Fallback: overloaded or server errors after the retries,
	// quota, model not found, ...; never a bad API key). They are set in the config file only.
	Fallbacks []Fallback `yaml:"fallbacks"`
	// FallbackCooldown is how long turns start on a fallback after the model before it failed;
	// the first turn after it tries the main model again.
	FallbackCooldown time.Duration `yaml:"fallback_cooldown" min:"1"`
}

// Fallback is one fallback model. Empty fields take the main provider's when the fallback is
// on the same provider (a smaller model at the same endpoint needs only name and model).
type Fallback struct {
	// Name identifies the fallback in notices, request records and cache-break forensics.
	Name string `yaml:"name"`
	// Provider is openai, anthropic or fake; empty means the main provider's.
	Provider  string `yaml:"provider"`
	Model     string `yaml:"model"`
	BaseURL   string `yaml:"base_url"`
	APIKeyEnv string `yaml:"api_key_env"`
	// ContextLength is the fallback's own window (0: the table of known models, else 128,000);
	// a smaller window than the main model's compacts the history before the fallback is asked.
	ContextLength int `yaml:"context_length"`
	// API is chat or responses for provider openai; empty means the main provider's when it is
	// the same provider, else chat.
	API string `yaml:"api"`
}

// ProviderFor is the provider setting the fallback is dialled with, given the main one.
func (f Fallback) ProviderFor(main Provider) Provider {
	p := Provider{Name: cmp.Or(f.Provider, main.Name), Model: f.Model, BaseURL: f.BaseURL, APIKeyEnv: f.APIKeyEnv,
		ContextLength: f.ContextLength, API: f.API}
	if p.Name == main.Name {
		p.BaseURL = cmp.Or(p.BaseURL, main.BaseURL)
		p.APIKeyEnv = cmp.Or(p.APIKeyEnv, main.APIKeyEnv)
		p.API = cmp.Or(p.API, main.API)
		p.CacheTTL = main.CacheTTL
	}
	return p
}

// CacheLifetime is CacheTTL as a duration (5 minutes when unset).
func (p Provider) CacheLifetime() time.Duration {
	if p.CacheTTL == "1h" {
		return time.Hour
	}
	return 5 * time.Minute
}

// KeyEnv is the environment variable the provider's API key is read from.
func (p Provider) KeyEnv() string {
	if p.APIKeyEnv != "" {
		return p.APIKeyEnv
	}
	switch p.Name {
	case "openai":
		return "OPENAI_API_KEY"
	case "anthropic":
		return "ANTHROPIC_API_KEY"
	}
	return ""
}

// Compression configures context compaction.
type Compression struct {
	Enabled bool `yaml:"enabled"`
	// Threshold is the fraction of the main model's context window that triggers compaction.
	Threshold float64 `yaml:"threshold" range:"0,1"`
	// ThresholdTokens caps the trigger in tokens; 0 means ratio only.
	ThresholdTokens int `yaml:"threshold_tokens" min:"0"`
	// TargetRatio sizes the legacy tail budget; the compressor clamps it to [0.10, 0.80].
	TargetRatio float64 `yaml:"target_ratio" range:"0,1"`
	// TargetFill is the share of the room between the fixed prompt (system prompt, tools) and
	// the trigger that the conversation fills right after a compaction (0 = 0.5). Summary,
	// ledger, head and tail budgets follow from it and from the window.
	TargetFill float64 `yaml:"target_fill" range:"0,1"`
	TailMode   string  `yaml:"tail_mode" enum:"lean,legacy"`
	// InPlace archives old rows in the same session; false rotates into a continuation child.
	InPlace               bool `yaml:"in_place"`
	ProtectLastN          int  `yaml:"protect_last_n" min:"0"`
	ProtectFirstN         int  `yaml:"protect_first_n" min:"0"`
	AbortOnSummaryFailure bool `yaml:"abort_on_summary_failure"`
	// ModelThresholds overrides Threshold per model: keys match as substrings of the model name
	// ("provider:substr" only on that provider), the longest match wins.
	ModelThresholds map[string]float64 `yaml:"model_thresholds" range:"0,1"`
	// Engine picks who writes a compaction: "local" (spool's own compressor, the default) or
	// "provider" (the provider compacts: the Responses API's POST /responses/compact, kept in
	// the summary row and replayed byte for byte; spool's split, ledger and tail still run, and
	// its own compressor takes over when the provider's compaction fails or is unavailable).
	Engine string `yaml:"engine" enum:"local,provider"`
}

// Auxiliary configures side models.
type Auxiliary struct {
	Compression AuxModel `yaml:"compression"`
}

// AuxModel is a side model; empty fields fall back to the main provider's. A Provider or BaseURL
// of its own gives the side model a client of its own, which needs a Model.
type AuxModel struct {
	Model    string `yaml:"model"`
	Provider string `yaml:"provider" enum:",openai,anthropic,fake"`
	BaseURL  string `yaml:"base_url"`
	// APIKeyEnv names the variable holding the side provider's key; empty means the main
	// provider's when it is the same provider, else the side provider's usual variable.
	APIKeyEnv string        `yaml:"api_key_env"`
	Timeout   time.Duration `yaml:"timeout" min:"0"`
	// ContextLength is the side model's window in tokens; 0 looks the model up in the table of
	// known models. The compressor fits the history it sends to it.
	ContextLength int `yaml:"context_length" min:"0"`
}

// ClientFor is the provider a side model is called through, given the main one, and whether
// that differs from the main client (another provider or another base URL).
func (a AuxModel) ClientFor(main Provider) (Provider, bool) {
	if (a.Provider == "" || a.Provider == main.Name) && (a.BaseURL == "" || a.BaseURL == main.BaseURL) {
		return main, false
	}
	p := Provider{Name: cmp.Or(a.Provider, main.Name), Model: a.Model, BaseURL: a.BaseURL, APIKeyEnv: a.APIKeyEnv}
	if p.APIKeyEnv == "" && p.Name == main.Name {
		p.APIKeyEnv = main.APIKeyEnv
	}
	return p, true
}

func (a AuxModel) hasOwnClient(main Provider) bool {
	_, own := a.ClientFor(main)
	return own
}

// Sessions bounds whole-session operations; 0 disables a cap.
type Sessions struct {
	MaxResumeMessages int `yaml:"max_resume_messages" min:"0"`
	MaxExportMessages int `yaml:"max_export_messages" min:"0"`
}

// Leases configures turn leases (one turn at a time per conversation, across processes).
type Leases struct {
	TTL        time.Duration `yaml:"ttl" min:"1"`
	RenewEvery time.Duration `yaml:"renew_every" min:"1"`
	Wait       time.Duration `yaml:"wait" min:"0"`
}

// Serve configures `spool serve`, the OpenAI-compatible gateway.
type Serve struct {
	// Listen is the address to listen on. Without Keys only a loopback address is accepted.
	Listen string `yaml:"listen"`
	// Keys maps a principal name to the sha256 hex digest of its API key (several digests
	// separated by commas); `spool serve hash-key` prints a digest. A key sees only its
	// principal's sessions.
	Keys map[string]string `yaml:"keys"`
	// BusyWait is how long a request waits for a session whose turn is running before 409.
	BusyWait time.Duration `yaml:"busy_wait" min:"0"`
	// RetryAfter is the Retry-After a busy answer carries.
	RetryAfter time.Duration `yaml:"retry_after" min:"1"`
	// MaxConcurrent bounds the running requests of one principal (429 beyond).
	MaxConcurrent int `yaml:"max_concurrent" min:"1"`
	// MaxRequestBytes bounds a request body (413 beyond).
	MaxRequestBytes int `yaml:"max_request_bytes" min:"1024"`
	// TurnTimeout bounds one turn; DrainTimeout is how long SIGTERM lets running turns finish.
	TurnTimeout  time.Duration `yaml:"turn_timeout" min:"1"`
	DrainTimeout time.Duration `yaml:"drain_timeout" min:"0"`
	// KeepAlive is the silence after which a stream gets a keep-alive comment.
	KeepAlive time.Duration `yaml:"keepalive" min:"1"`
	// StreamBufferBytes bounds what one stream holds for a client that has not taken it yet
	// (beyond the event in hand): a client that stops reading has its stream cut there, logged
	// once; its turn goes on and is stored (GET /v1/responses/{id}, the conversation).
	StreamBufferBytes int `yaml:"stream_buffer_bytes" min:"4096"`
	// CORSOrigins lists the browser origins allowed to call the API, comma-separated; empty
	// allows none.
	CORSOrigins string `yaml:"cors_origins"`
	// AllowedHosts lists, comma-separated, the host names (name or name:port) a server without
	// Keys answers besides the loopback ones (localhost, 127.0.0.0/8, [::1]); any other Host
	// header is refused (DNS rebinding). Ignored with Keys.
	AllowedHosts string `yaml:"allowed_hosts"`
	// Tools maps a principal (a name of Keys; "local" without keys) to the spool tools its API
	// sessions may use: session_search and/or memory, and MCP tools (mcp__<server>__<tool>, or
	// mcp__<server>__* for every tool of a server), separated by spaces or commas. A principal
	// not listed gets none; an MCP call is allowed by this list or refused, never asked about. session_search reads only the principal's sessions; memory writes
	// the principal's own memories ($SPOOL_HOME/principals/<name>/memories; the CLI's for local).
	Tools map[string]string `yaml:"tools"`
}

// Default returns the built-in configuration for home (paths are resolved against it).
func Default(home string) Config {
	return Config{
		Home: home,
		Database: Database{
			Path:         "spool.db",
			Synchronous:  "normal",
			JournalMode:  "wal",
			WriteTimeout: 60 * time.Second,
		},
		Compression: Compression{
			Enabled:         true,
			Threshold:       0.50,
			ThresholdTokens: 256000,
			TargetRatio:     0.20,
			TargetFill:      0.5,
			TailMode:        "lean",
			Engine:          "local",
			InPlace:         true,
			ProtectLastN:    20,
			ProtectFirstN:   3,
			ModelThresholds: map[string]float64{},
		},
		Auxiliary: Auxiliary{Compression: AuxModel{Timeout: 120 * time.Second}},
		Sessions:  Sessions{MaxResumeMessages: 20000, MaxExportMessages: 20000},
		Leases:    Leases{TTL: 300 * time.Second, RenewEvery: 60 * time.Second, Wait: 30 * time.Minute},
		Serve: Serve{
			Listen: "127.0.0.1:8642", BusyWait: 2 * time.Second, RetryAfter: time.Second, MaxConcurrent: 8,
			MaxRequestBytes: 4 << 20, TurnTimeout: 10 * time.Minute, DrainTimeout: 30 * time.Second, KeepAlive: 15 * time.Second,
			StreamBufferBytes: 1 << 20,
		},
		Provider:   Provider{FallbackCooldown: 5 * time.Minute},
		MCP:        MCP{ConnectTimeout: 30 * time.Second, CallTimeout: 2 * time.Minute, MaxRestarts: 3},
		Delegation: Delegation{MaxDepth: 1, MaxParallel: 3},
		Recall:     Recall{Detail: "adaptive"},
		Platforms:  Platforms{Telegram: Platform{GroupPerUser: true}, Slack: Platform{GroupPerUser: true}, Discord: Platform{GroupPerUser: true}},
	}
}
