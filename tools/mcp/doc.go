// Package mcp turns the tools of Model Context Protocol servers into tools.Tool values, so they
// join the built-in tools in one tools.Registry.
//
// Contract:
//   - Start connects every configured server (a stdio command or a streamable HTTP URL) once and
//     lists its tools; a server that cannot be reached is recorded as failed with its reason and
//     does not stop the others. The Manager owns every server process and connection; Close ends
//     them all (stdin closed, then the process killed if it lingers).
//   - A server's tool "t" becomes "mcp__<server>__<t>", sanitised to the registry's name rule
//     ([A-Za-z0-9_-], at most 64; a name that had to be cut or changed gets a short hash of the
//     original so it stays unique and stable). Its input schema is the Parameters (the registry
//     canonicalises the bytes) and its description starts with the server's name. Tools come
//     from the list taken at Start (or the last Refresh), so the tools prefix is byte-identical across processes as
//     long as the servers' lists do not change; the registry sorts them.
//   - A call is treated like a terminal command: Env.Approver must approve it (nil denies). It
//     runs with a per-call timeout and returns the text content of the result; a tool error, a
//     dead server or a hung one gives an error, never a stuck turn. A dead or hung server is
//     killed and reconnected on the next call, at most MaxRestarts times; then it is failed and
//     every call says so.
//   - Refresh lists every connected server's tools again and names the servers whose list really
//     changed (compared by name, description and schema, whatever the server's order); the
//     caller does it between turns only (cli: at the start of every turn after the first), never
//     within one, so a turn's tools never change under it.
package mcp
