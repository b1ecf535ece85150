// tests/server/tool_choice_test.mjs: forced tool choices and a reasoning budget on the random
// tiny model (no forced-output hook: the server forces the DSML structure itself and the model
// samples the rest), through the real openai and @anthropic-ai/sdk SDKs. A named choice gives
// one call of that tool (OpenAI finish_reason "stop", Anthropic stop_reason "tool_use"), a
// required / any choice a call of a declared tool, both with arguments the SDK reads as a JSON
// object; the call's history sent back is replayed and reused; "none" never yields a call;
// unknown names and forced choices without tools are 400s in each API's error shape; Anthropic's
// thinking.budget_tokens ends the reasoning after that many tokens. Then a non-streaming client
// that closes its connection has its request cancelled within a few tokens (the trace records
// finish "cancelled") and the next request is served normally.
import { before, after } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import fs from "node:fs";
import path from "node:path";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { test, tempDir, removeDir, startServer, waitIdle, health } from "./harness.mjs";

const fn = (name, props) => ({
  type: "function",
  function: { name, description: `The ${name} tool`, parameters: { type: "object", properties: props } },
});
const chatTools = [fn("get_weather", { city: { type: "string" } }), fn("get_time", { zone: { type: "string" } })];
const names = chatTools.map((t) => t.function.name);
const anthropicTools = chatTools.map((t) => ({
  name: t.function.name,
  description: t.function.description,
  input_schema: t.function.parameters,
}));
const responsesTools = chatTools.map((t) => ({ type: "function", ...t.function }));

let server;
let openai;
let anthropic;
let traceDir;
let traceFile;
before(async () => {
  traceDir = tempDir("ds4-tc-");
  traceFile = path.join(traceDir, "trace.jsonl");
  server = await startServer(["--ctx", "1024", "--trace", traceFile]);
  openai = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "unused", maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: server.base, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  try {
    if (server) await server.stop();
  } finally {
    if (traceDir) removeDir(traceDir);
  }
});

const traces = () =>
  fs.readFileSync(traceFile, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const chat = (extra) => ({
  model: "deepseek-chat",
  messages: [{ role: "user", content: "What is the time in Oslo?" }],
  tools: chatTools,
  max_tokens: 200,
  seed: 7,
  ...extra,
});

test("chat: a named function is called, finish_reason stop, streaming too", async () => {
  const choice = { type: "function", function: { name: "get_time" } };
  const r = await openai.chat.completions.create(chat({ tool_choice: choice }));
  const msg = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, "stop");
  assert.equal(msg.tool_calls.length, 1);
  assert.equal(msg.tool_calls[0].function.name, "get_time");
  assert.match(msg.tool_calls[0].id, /^call_[0-9a-f]{32}$/);
  assert.ok(isObject(JSON.parse(msg.tool_calls[0].function.arguments)));
  const out = traces().at(-1).output;
  assert.ok(out.startsWith('\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_time">\n'), out);

  const stream = await openai.chat.completions.create(chat({ tool_choice: choice, stream: true, seed: 8 }));
  const calls = [];
  let finish = null;
  for await (const c of stream) {
    for (const ch of c.choices) {
      for (const d of ch.delta?.tool_calls ?? []) {
        if (d.id) calls[d.index] = { name: d.function.name, args: "" };
        calls[d.index].args += d.function?.arguments ?? "";
      }
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  assert.equal(finish, "stop");
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, "get_time");
  assert.ok(isObject(JSON.parse(calls[0].args)));

  // Few tokens allowed: the block is closed early rather than cut by max_tokens.
  const short = await openai.chat.completions.create(chat({ tool_choice: choice, max_tokens: 30, seed: 10 }));
  assert.equal(short.choices[0].message.tool_calls[0].function.name, "get_time");
  assert.ok(short.usage.completion_tokens <= 30);
});

test("chat: required calls a declared tool; the history comes back replayed and cached", async () => {
  const first = await openai.chat.completions.create(chat({ tool_choice: "required", seed: 9 }));
  assert.equal(first.choices[0].finish_reason, "tool_calls");
  const call = first.choices[0].message.tool_calls[0];
  assert.ok(names.includes(call.function.name), call.function.name);
  assert.ok(isObject(JSON.parse(call.function.arguments)));
  const sampled = traces().at(-1).output;
  const second = await openai.chat.completions.create(
    chat({
      messages: [
        { role: "user", content: "What is the time in Oslo?" },
        first.choices[0].message,
        { role: "tool", tool_call_id: call.id, content: "12:00" },
      ],
      max_tokens: 4,
    }),
  );
  // The sampled block (forced tokens included) is what the next prompt renders.
  assert.ok(traces().at(-1).rendered.includes(sampled), "exact replay of the forced block");
  const cached = second.usage.prompt_tokens_details.cached_tokens;
  assert.ok(cached >= first.usage.prompt_tokens + first.usage.completion_tokens - 2,
    `cached ${cached}, first ${first.usage.prompt_tokens} + ${first.usage.completion_tokens}`);
});

test("chat: none never calls; bad choices are 400s naming tool_choice", async () => {
  for (let seed = 1; seed <= 3; seed++) {
    const r = await openai.chat.completions.create(chat({ tool_choice: "none", seed, max_tokens: 24 }));
    assert.equal(r.choices[0].message.tool_calls, undefined);
    assert.notEqual(r.choices[0].finish_reason, "tool_calls");
    assert.ok(!traces().at(-1).rendered.includes("## Tools"), "schemas not rendered");
  }
  const bad = [
    chat({ tool_choice: { type: "function", function: { name: "nope" } } }),
    chat({ tool_choice: "required", tools: undefined }),
    chat({ tool_choice: "sometimes" }),
  ];
  for (const body of bad) {
    await assert.rejects(openai.chat.completions.create(body), (e) => e.status === 400 && e.param === "tool_choice");
  }
});

test("messages: tool and any give tool_use blocks; the budget ends the thinking", async () => {
  const body = {
    model: "deepseek-chat",
    max_tokens: 200,
    messages: [{ role: "user", content: "What is the time in Oslo?" }],
    tools: anthropicTools,
  };
  const named = await anthropic.messages.create({ ...body, tool_choice: { type: "tool", name: "get_time" } });
  assert.equal(named.stop_reason, "tool_use");
  const uses = named.content.filter((b) => b.type === "tool_use");
  assert.equal(uses.length, 1);
  assert.equal(uses[0].name, "get_time");
  assert.ok(isObject(uses[0].input));

  const any = await anthropic.messages
    .stream({ ...body, tool_choice: { type: "any", disable_parallel_tool_use: true } })
    .finalMessage();
  assert.equal(any.stop_reason, "tool_use");
  const anyUses = any.content.filter((b) => b.type === "tool_use");
  assert.equal(anyUses.length, 1);
  assert.ok(names.includes(anyUses[0].name));
  assert.ok(isObject(anyUses[0].input));

  // Thinking on with a small budget: the reasoning stops there and the forced call follows.
  const budget = 6;
  const thought = await anthropic.messages.create({
    ...body,
    model: "deepseek-v4-flash",
    thinking: { type: "enabled", budget_tokens: budget },
    tool_choice: { type: "tool", name: "get_weather" },
  });
  assert.deepEqual(thought.content.map((b) => b.type), ["thinking", "tool_use"]);
  assert.equal(thought.content[1].name, "get_weather");
  const raw = traces().at(-1).output;
  const thinkEnd = raw.indexOf("</think>");
  assert.ok(thinkEnd > 0, raw);
  assert.ok(raw.slice(thinkEnd).startsWith('</think>\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">'), raw);

  await assert.rejects(
    anthropic.messages.create({ ...body, tool_choice: { type: "tool", name: "nope" } }),
    (e) => e.status === 400 && e.error?.type === "error" && e.error?.error?.type === "invalid_request_error",
  );
});

test("messages: a budget without tools closes the reasoning after that many tokens", async () => {
  const budget = 5;
  const r = await anthropic.messages.create({
    model: "deepseek-v4-flash",
    max_tokens: 40,
    messages: [{ role: "user", content: "Think briefly" }],
    thinking: { type: "enabled", budget_tokens: budget },
  });
  assert.equal(r.content[0].type, "thinking");
  const raw = traces().at(-1).output;
  assert.ok(raw.includes("</think>"), raw);
  assert.ok(r.usage.output_tokens > budget);
});

test("responses: a named function and required give function_call items", async () => {
  const body = { model: "deepseek-chat", input: "What is the time in Oslo?", tools: responsesTools, max_output_tokens: 200 };
  const named = await openai.responses.create({ ...body, tool_choice: { type: "function", name: "get_weather" } });
  const calls = named.output.filter((i) => i.type === "function_call");
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, "get_weather");
  assert.ok(isObject(JSON.parse(calls[0].arguments)));
  assert.equal(named.status, "completed");

  const stream = await openai.responses.create({ ...body, tool_choice: "required", stream: true });
  let done = null;
  for await (const e of stream) if (e.type === "response.completed") done = e.response;
  const req = done.output.filter((i) => i.type === "function_call");
  assert.ok(req.length >= 1);
  assert.ok(names.includes(req[0].name));
  assert.ok(isObject(JSON.parse(req[0].arguments)));

  await assert.rejects(
    openai.responses.create({ ...body, tool_choice: { type: "function", name: "nope" } }),
    (e) => e.status === 400,
  );
});

// A raw HTTP/1.1 client that sends one request and closes once the server is generating for it.
async function postAndClose(port, body) {
  const sock = net.connect(port, "127.0.0.1");
  await new Promise((r) => sock.once("connect", r));
  const bytes = Buffer.from(JSON.stringify(body));
  sock.write(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${bytes.length}\r\n\r\n`,
  );
  sock.write(bytes);
  for (let i = 0; (await health(server.base)).running < 1; i++) {
    assert.ok(i < 500, "request never started");
    await new Promise((r) => setTimeout(r, 10));
  }
  await new Promise((r) => setTimeout(r, 200)); // some tokens in
  sock.destroy();
}

test("a non-streaming client that disconnects is cancelled; the next request is served", async () => {
  const before = traces().length;
  const t0 = Date.now();
  await postAndClose(server.port, { model: "deepseek-chat", messages: [{ role: "user", content: "Go on" }], max_tokens: 100000 });
  const ms = await waitIdle(server.base);
  // ~900 tokens of room take many seconds on the tiny model; a cancellation ends within a token.
  assert.ok(ms < 1500, `took ${ms} ms to stop`);
  // The handler writes its trace line once it has the end (just after /health shows idle).
  for (let i = 0; traces().length <= before; i++) {
    assert.ok(i < 200, "no trace line for the cancelled request");
    await new Promise((r) => setTimeout(r, 10));
  }
  const line = traces()[before];
  assert.equal(line.finish, "cancelled");
  assert.equal(line.stream, false);
  assert.ok(line.completion_tokens < 900, `${line.completion_tokens} tokens`);
  assert.match(server.stderr(), /chat\.completions prompt=\d+ cached=\d+ completion=\d+ finish=cancelled/);
  // The session is consistent: the same seeded request twice gives the same answer.
  const again = { model: "deepseek-chat", messages: [{ role: "user", content: "Go on" }], max_tokens: 6, seed: 3 };
  const r = await openai.chat.completions.create(again);
  assert.equal(r.choices[0].message.role, "assistant");
  assert.ok(["stop", "length"].includes(r.choices[0].finish_reason));
  const r2 = await openai.chat.completions.create(again);
  assert.equal(r2.choices[0].message.content, r.choices[0].message.content);
  assert.ok(Date.now() - t0 < 20000);
});
