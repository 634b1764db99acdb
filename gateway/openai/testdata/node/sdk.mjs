// Drives `spool serve` with the official npm openai package, unchanged. Run by TestNodeSDK
// with SPOOL_URL (the server) and UPSTREAM_URL (the test's fake model, with gate controls);
// prints one JSON object of observations on stdout for the Go test to check.
import OpenAI from "openai";

const base = process.env.SPOOL_URL;
const upstream = process.env.UPSTREAM_URL;
const out = { statuses: [] };
let onConflict = null;

const client = new OpenAI({
  baseURL: base + "/v1",
  apiKey: "unused",
  maxRetries: 2,
  fetch: async (url, init) => {
    const res = await fetch(url, init);
    out.statuses.push(res.status);
    if (res.status === 409 && onConflict) {
      const hook = onConflict;
      onConflict = null;
      await hook();
    }
    return res;
  },
});

// 1. Not streamed; the session id comes back in a header.
const first = await client.chat.completions
  .create({ model: "spool", messages: [{ role: "user", content: "hello from node" }] })
  .withResponse();
const sid = first.response.headers.get("x-spool-session-id");
out.first = { sid, content: first.data.choices[0].message.content, object: first.data.object, usage: first.data.usage };

// 2. Streamed on the same session, with the usage chunk.
const stream = await client.chat.completions.create(
  { model: "spool", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "streamed in node" }] },
  { headers: { "X-Spool-Session-Id": sid } },
);
let text = "";
let usage = null;
let chunks = 0;
for await (const chunk of stream) {
  chunks++;
  if (chunk.choices.length === 0) usage = chunk.usage;
  else text += chunk.choices[0].delta?.content ?? "";
}
out.stream = { text, usage, chunks };

// 3. An error the SDK decodes, not retried (x-should-retry: false).
out.statuses = [];
try {
  await client.chat.completions.create({ model: "gpt-nope", messages: [{ role: "user", content: "hi" }] });
  out.error = { thrown: false };
} catch (e) {
  out.error = { thrown: true, status: e.status, code: e.code, type: e.type, attempts: out.statuses.length, isAPIError: e instanceof OpenAI.APIError };
}

// 4. Busy: the second request gets 409 while the first runs; the SDK retries it by itself.
const slow = client.chat.completions.create(
  { model: "spool", messages: [{ role: "user", content: "slow one gate:nodebusy" }] },
  { headers: { "X-Spool-Session-Id": sid } },
);
await fetch(upstream + "/gate/arrived/nodebusy");
out.statuses = [];
onConflict = async () => {
  await fetch(upstream + "/gate/open/nodebusy", { method: "POST" });
  await slow; // the running turn is done before the SDK sees the 409
};
const second = await client.chat.completions.create(
  { model: "spool", messages: [{ role: "user", content: "second in node" }] },
  { headers: { "X-Spool-Session-Id": sid } },
);
out.busy = { statuses: [...out.statuses], content: second.choices[0].message.content, slow: (await slow).choices[0].message.content };

// 5. Idempotent retry: the same key and body replays.
const idem = { headers: { "Idempotency-Key": "node-1", "X-Spool-Session-Id": sid } };
const body = { model: "spool", messages: [{ role: "user", content: "once from node" }] };
const a = await client.chat.completions.create(body, idem);
const b = await client.chat.completions.create(body, idem);
out.idempotent = { sameId: a.id === b.id, a: a.choices[0].message.content, b: b.choices[0].message.content };

// 6. A client-declared function tool, the usual loop: the call comes back as tool_calls, the
// whole history goes back with the result (not streamed, then streamed), on a fresh session.
const tools = [{ type: "function", function: { name: "get_weather", description: "Weather of a city.",
  parameters: { type: "object", properties: { city: { type: "string" } } } } }];
const msgs = [{ role: "user", content: 'CALL get_weather {"city":"Lima"}' }];
const t1 = await client.chat.completions.create({ model: "spool", messages: msgs, tools }).withResponse();
const call = t1.data.choices[0].message.tool_calls?.[0];
msgs.push(t1.data.choices[0].message, { role: "tool", tool_call_id: call?.id, content: "foggy" });
const t2 = await client.chat.completions.create({ model: "spool", messages: msgs, tools }).withResponse();
msgs.push(t2.data.choices[0].message, { role: "user", content: 'CALL get_weather {"city":"Cusco"}' });
// Streamed: the SDK's own stream helper accumulates the tool call deltas.
const runner = client.chat.completions.stream({ model: "spool", messages: msgs, tools });
const t3 = await runner.finalChatCompletion();
const call3 = t3.choices[0].message.tool_calls?.[0];
msgs.push(t3.choices[0].message, { role: "tool", tool_call_id: call3?.id, content: "sunny" });
let streamedText = "";
for await (const chunk of await client.chat.completions.create({ model: "spool", messages: msgs, tools, stream: true })) {
  streamedText += chunk.choices[0]?.delta?.content ?? "";
}
out.tools = {
  sid: t1.response.headers.get("x-spool-session-id"),
  sid2: t2.response.headers.get("x-spool-session-id"),
  finish: t1.data.choices[0].finish_reason, name: call?.function.name, args: call?.function.arguments,
  after: t2.data.choices[0].message.content,
  finish3: t3.choices[0].finish_reason, args3: call3?.function.arguments,
  streamed: streamedText,
};

console.log(JSON.stringify(out));
