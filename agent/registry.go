package agent

import (
	"context"

	"github.com/spoolhq/spool/provider"
	"github.com/spoolhq/spool/store"
	"github.com/spoolhq/spool/tools"
)

// Registry offers a tools.Registry to the agent. env is the environment every call gets; its
// SessionID is set to the calling session and CallID to the call.
func Registry(reg *tools.Registry, env tools.Env) Tools { return registryTools{reg: reg, env: env} }

type registryTools struct {
	reg *tools.Registry
	env tools.Env
}

func (r registryTools) Definitions() []provider.Tool { return r.reg.Definitions() }

func (r registryTools) Call(ctx context.Context, sessionID string, c store.ToolCall) (string, bool) {
	env := r.env
	env.SessionID, env.CallID = sessionID, c.ID
	res := r.reg.Call(ctx, env, c.Function.Name, c.Function.Arguments)
	return res.Content, res.IsError
}
