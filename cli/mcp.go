package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/spoolhq/spool/agent"
	"github.com/spoolhq/spool/config"
	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tools"
	"github.com/spoolhq/spool/tools/mcp"
)

// mcpServers starts the configured MCP servers once per process (Run closes them) and returns
// their manager; nil when none are configured. The servers are the home config's and, when
// mcp.project_servers allows it, those of the project's .spool/config.yaml (config.LoadProject);
// a project file that is not allowed is named in one line on stderr.
func (a *app) mcpServers(ctx context.Context, cfg config.Config) (*mcp.Manager, error) {
	if a.mcp != nil {
		return a.mcp, nil
	}
	wd, _ := os.Getwd()
	notice, err := config.LoadProject(&cfg, wd)
	if err != nil {
		return nil, err
	}
	if notice != "" {
		fmt.Fprintf(a.stderr, "spool: %s\n", oneLine(notice))
	}
	if len(cfg.MCP.Servers) == 0 {
		return nil, nil
	}
	servers := make([]mcp.Server, 0, len(cfg.MCP.Servers))
	for _, s := range cfg.MCP.Servers {
		servers = append(servers, mcp.Server{Name: s.Name, Command: s.Command, Env: s.Env, URL: s.URL})
	}
	restarts := cfg.MCP.MaxRestarts
	if restarts == 0 {
		restarts = -1 // none
	}
	a.mcp = mcp.Start(ctx, servers, mcp.Options{
		ConnectTimeout: cfg.MCP.ConnectTimeout,
		CallTimeout:    cfg.MCP.CallTimeout,
		MaxRestarts:    restarts,
		// A server is a program the user chose, but spool's own keys are not its business: it
		// inherits the allow-list a terminal command does, plus its own env from the config.
		Environ: tools.CommandEnviron(os.Environ(), cfg.Tools.Env),
	})
	return a.mcp, nil
}

// mcpTools are the tools of the connected MCP servers; a server that failed is named on stderr
// (the agent runs without its tools).
func (a *app) mcpTools(ctx context.Context, cfg config.Config) ([]tools.Tool, error) {
	m, err := a.mcpServers(ctx, cfg)
	if m == nil || err != nil {
		return nil, err
	}
	if !a.mcpWarned {
		a.mcpWarned = true
		for _, s := range m.Status() {
			if s.State == mcp.Failed {
				fmt.Fprintf(a.stderr, "spool: warning: MCP server %s failed: %s\n", s.Name, oneLine(s.Error))
			}
		}
	}
	return m.Tools(), nil
}

// agentTools are the tools of an agent: the built-ins, plus the MCP servers' tools when servers
// are configured, whose lists are refreshed between turns.
func (a *app) agentTools(ctx context.Context, cfg config.Config, env tools.Env) (agent.Tools, error) {
	extra, err := a.mcpTools(ctx, cfg)
	if err != nil {
		return nil, err
	}
	build := func(extra []tools.Tool) (agent.Tools, error) {
		reg, err := tools.New(append(tools.Builtins(), extra...)...)
		if err != nil {
			return nil, err
		}
		return agent.Registry(reg, env), nil
	}
	return a.liveTools(extra, build)
}

// liveTools makes the tools of build(MCP tools), refreshed between turns when MCP servers run.
func (a *app) liveTools(extra []tools.Tool, build func([]tools.Tool) (agent.Tools, error)) (agent.Tools, error) {
	reg, err := build(extra)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	if a.mcp == nil {
		return reg, nil
	}
	return &liveTools{m: a.mcp, build: build, reg: reg, stderr: a.stderr}, nil
}

// liveTools offers the built-in and MCP tools and lists the MCP servers' tools again at the start
// of every turn after the first (Definitions is read once per turn), never within one. When a
// server's list changed, the tools prefix changes and the next model call cannot use the prompt
// cache: a line on stderr names the server.
type liveTools struct {
	m      *mcp.Manager
	build  func(mcpTools []tools.Tool) (agent.Tools, error)
	stderr io.Writer

	mu     sync.Mutex
	reg    agent.Tools
	served bool
}

func (l *liveTools) Definitions() []provider.Tool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.served {
		if changed := l.m.Refresh(context.Background()); len(changed) > 0 {
			reg, err := l.build(l.m.Tools())
			if err != nil {
				fmt.Fprintf(l.stderr, "spool: warning: MCP servers %s changed their tools, kept the old list: %s\n", strings.Join(changed, ", "), oneLine(err.Error()))
			} else {
				l.reg = reg
				fmt.Fprintf(l.stderr, "spool: cache break: MCP server %s changed its tool list; the tools prefix changes once for this turn\n", strings.Join(changed, ", "))
			}
		}
	}
	l.served = true
	return l.reg.Definitions()
}

func (l *liveTools) Call(ctx context.Context, sessionID string, c store.ToolCall) (string, bool) {
	l.mu.Lock()
	reg := l.reg
	l.mu.Unlock()
	return reg.Call(ctx, sessionID, c)
}

// closeMCP ends the MCP servers this process started.
func (a *app) closeMCP() error {
	if a.mcp == nil {
		return nil
	}
	err := a.mcp.Close()
	a.mcp = nil
	return err
}

func (a *app) mcpCommand() *cobra.Command {
	cmd := groupCommand("mcp", "Inspect the MCP servers whose tools join the built-in ones")
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "Connect to every configured MCP server and show its state and tools",
		Long: "Start (or connect to) each server in the config's mcp.servers, list its tools and stop it\n" +
			"again. A server is connected, or failed with the reason. Tool names are the ones the model\n" +
			"sees: mcp__<server>__<tool>. With mcp.project_servers: true, the servers of the project's\n" +
			".spool/config.yaml (the working directory or a parent up to the git root) join them; one with\n" +
			"a home server's name replaces it.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			var status []mcp.Status
			m, err := a.mcpServers(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if m != nil {
				status = m.Status()
			}
			if status == nil {
				status = []mcp.Status{}
			}
			if a.json {
				return a.printJSON(map[string]any{"servers": status})
			}
			if len(status) == 0 {
				fmt.Fprintln(a.stdout, "No MCP servers configured (add them under mcp.servers in config.yaml).")
				return nil
			}
			for _, s := range status {
				state := s.State
				if s.Error != "" {
					state += ": " + visible(oneLine(s.Error))
				}
				fmt.Fprintf(a.stdout, "%s (%s) %s\n", visible(s.Name), s.Transport, state)
				for _, t := range s.Tools {
					line := "  " + t.Name
					if t.Skipped != "" {
						line += "  [not offered: " + oneLine(t.Skipped) + "]"
					} else if d := firstLine(t.Description); d != "" {
						line += "  " + d
					}
					fmt.Fprintln(a.stdout, visible(line))
				}
			}
			return nil
		},
	})
	return cmd
}

// firstLine is the first line of s, cut to 100 characters.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 100 {
		s = string(r[:100]) + "..."
	}
	return s
}
