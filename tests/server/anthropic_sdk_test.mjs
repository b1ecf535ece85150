// tests/server/anthropic_sdk_test.mjs: POST /v1/messages on the tiny model (CPU, loopback) driven
// by the real npm @anthropic-ai/sdk: non-streaming and streaming agree (greedy), the SDK parses
// every event of the stream (message_start first with a real input count, ping, block events,
// message_delta, message_stop last), thinking blocks end with a non-empty signature, stop
// sequences report stop_sequence, Claude Code's x-anthropic- system block is dropped so the next
// turn reuses the session (cache_read_input_tokens), a tool_use round trip (the hidden
// --test-forced-output hook makes the random model emit one DSML call) replays the sampled bytes
// and is cached, count_tokens, and errors in Anthropic's shape.
import { before, after } from "node:test";
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { test, startServer, FORCED_WEATHER_CALL as FORCED } from "./harness.mjs";

const tools = [
  {
    name: "get_weather",
    description: "Weather for a city",
    input_schema: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } } },
  },
];

let server;
let client;
before(async () => {
  server = await startServer(["--ctx", "2048", "--test-forced-output", FORCED]);
  client = new Anthropic({ baseURL: server.base, apiKey: "unused", maxRetries: 0 });
});
after(async () => server && server.stop());

const greedy = (extra) => ({
  model: "deepseek-chat",
  max_tokens: 8,
  temperature: 0,
  messages: [{ role: "user", content: "Hello there" }],
  ...extra,
});
const text = (msg) => msg.content.filter((b) => b.type === "text").map((b) => b.text).join("");

async function streamed(body) {
  const stream = client.messages.stream(body);
  const types = [];
  stream.on("streamEvent", (e) => types.push(e.type));
  const message = await stream.finalMessage();
  return { message, types };
}

test("non-streaming and streaming agree; the SDK parses every event", async () => {
  const r = await client.messages.create(greedy());
  assert.equal(r.type, "message");
  assert.equal(r.role, "assistant");
  assert.match(r.id, /^msg_[0-9a-f]{32}$/);
  assert.equal(r.model, "deepseek-chat");
  assert.ok(["max_tokens", "end_turn"].includes(r.stop_reason), r.stop_reason);
  assert.ok(text(r).length > 0);
  assert.ok(r.usage.input_tokens > 0);
  assert.ok(r.usage.output_tokens >= 1 && r.usage.output_tokens <= 8);
  assert.equal(typeof r.usage.cache_read_input_tokens, "number");

  const { message, types } = await streamed(greedy());
  assert.equal(text(message), text(r));
  assert.equal(message.stop_reason, r.stop_reason);
  assert.equal(types[0], "message_start");
  assert.equal(types.at(-1), "message_stop");
  assert.equal(types.at(-2), "message_delta");
  for (const t of ["content_block_start", "content_block_delta", "content_block_stop"]) {
    assert.ok(types.includes(t), `${t} in ${types}`);
  }
});

test("a stop sequence ends the text before it and is reported", async () => {
  const full = text(await client.messages.create(greedy({ max_tokens: 12 })));
  assert.ok(full.length >= 4, `greedy text '${full}'`);
  const stop = full.slice(2, 4);
  const at = full.indexOf(stop);
  const r = await client.messages.create(greedy({ max_tokens: 12, stop_sequences: [stop] }));
  assert.equal(r.stop_reason, "stop_sequence");
  assert.equal(r.stop_sequence, stop);
  assert.equal(text(r), full.slice(0, at));
});

test("thinking streams a thinking block closed by a signature", async () => {
  const { message, types } = await streamed({
    model: "deepseek-v4-flash",
    max_tokens: 6,
    thinking: { type: "enabled", budget_tokens: 1024 },
    messages: [{ role: "user", content: "Think" }],
  });
  const thinking = message.content.find((b) => b.type === "thinking");
  assert.ok(thinking && thinking.thinking.length > 0, JSON.stringify(message.content));
  assert.ok(thinking.signature.length > 0);
  assert.ok(types.includes("content_block_delta"));
});

test("x-anthropic- system blocks are dropped, so the next turn reuses the session", async () => {
  const system = (n) => [
    { type: "text", text: `x-anthropic-billing-header: cc_version=2.1; cch=${n};` },
    { type: "text", text: "You are a test.", cache_control: { type: "ephemeral" } },
  ];
  const first = await client.messages.create(greedy({ system: system(1) }));
  const second = await client.messages.create(
    greedy({
      system: system(2),
      messages: [
        { role: "user", content: "Hello there" },
        { role: "assistant", content: first.content },
        { role: "user", content: [{ type: "text", text: "And then?" }] },
      ],
    }),
  );
  assert.ok(
    second.usage.cache_read_input_tokens >= first.usage.input_tokens + first.usage.cache_read_input_tokens,
    JSON.stringify({ first: first.usage, second: second.usage }),
  );
});

test("tool_use round trip: streamed input_json_delta, stop_reason tool_use, cached replay", async () => {
  const body = {
    model: "deepseek-chat",
    max_tokens: 200,
    tools,
    messages: [{ role: "user", content: "Weather in Paris for 3 days?" }],
  };
  const { message, types } = await streamed(body);
  assert.equal(message.stop_reason, "tool_use");
  const use = message.content.find((b) => b.type === "tool_use");
  assert.ok(use, JSON.stringify(message.content));
  assert.match(use.id, /^toolu_[0-9a-f]{32}$/);
  assert.equal(use.name, "get_weather");
  assert.deepEqual(use.input, { city: "Paris", days: 3 });
  assert.ok(types.includes("content_block_delta"));

  const second = await client.messages.create({
    ...body,
    tool_choice: { type: "auto" },
    messages: [
      ...body.messages,
      { role: "assistant", content: message.content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny, 21 C" }] },
    ],
  });
  // The prompt and every sampled token but the last were evaluated and are reused.
  const { input_tokens, cache_read_input_tokens } = message.usage;
  assert.ok(
    second.usage.cache_read_input_tokens >= input_tokens + cache_read_input_tokens + message.usage.output_tokens - 1,
    JSON.stringify({ first: message.usage, second: second.usage }),
  );
});

test("count_tokens counts the rendered prompt", async () => {
  const r = await client.messages.countTokens({ model: "deepseek-chat", messages: greedy().messages });
  const m = await client.messages.create(greedy());
  assert.equal(r.input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens);
});

test("errors come in Anthropic's shape", async () => {
  await assert.rejects(client.messages.create(greedy({ model: "claude-nope" })), (e) => {
    assert.equal(e.status, 404);
    assert.equal(e.error.type, "error");
    assert.equal(e.error.error.type, "not_found_error");
    return true;
  });
  await assert.rejects(client.messages.create(greedy({ messages: "nope" })), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.error.error.type, "invalid_request_error");
    assert.match(e.error.error.message, /messages/);
    return true;
  });
});
