package mcp

import "time"

// Server is one configured MCP server: a stdio Command (argv) or a streamable HTTP URL.
type Server struct {
	Name    string
	Command []string
	// Env is added to the command's environment (which never holds spool's secrets).
	Env map[string]string
	URL string
}

// Options bound what the servers may cost.
type Options struct {
	// ConnectTimeout bounds connecting and listing tools (default 30s).
	ConnectTimeout time.Duration
	// CallTimeout bounds one tool call (default 2m).
	CallTimeout time.Duration
	// MaxRestarts is how often a dead or hung server is reconnected before it is failed
	// (default 3; negative means never).
	MaxRestarts int
	// Environ is the environment a stdio server starts from (tools.CommandEnviron's allow-list);
	// nil means none besides the server's Env.
	Environ []string
}

func (o Options) withDefaults() Options {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 30 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 2 * time.Minute
	}
	if o.MaxRestarts == 0 {
		o.MaxRestarts = 3
	} else if o.MaxRestarts < 0 {
		o.MaxRestarts = 0
	}
	return o
}
