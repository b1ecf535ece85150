// tests/server/responses_sdk_test.mjs: POST /v1/responses on the tiny model (CPU, loopback)
// driven by the real npm `openai` SDK's responses client: non-streaming and streaming agree
// (greedy), the SDK's stream helper accepts every event (response.created first, sequence
// numbers in order, a terminal event last), reasoning summaries when asked for,
// previous_response_id continues the live conversation (cached tokens) and an unknown one is a
// clear 400, non-function tools are skipped, and a function_call round trip (the hidden
// --test-forced-output hook) replays the sampled DSML and is cached.
import { before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { test, startServer, FORCED_WEATHER_CALL as FORCED } from "./harness.mjs";

const tools = [
  { type: "web_search" },
  { type: "namespace", name: "mcp", tools: [] },
  {
    type: "function",
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } } },
  },
];

let server;
let client;
before(async () => {
  server = await startServer(["--ctx", "2048", "--test-forced-output", FORCED]);
  client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => server && server.stop());

const greedy = (extra) => ({
  model: "deepseek-chat",
  input: "Hello there",
  max_output_tokens: 8,
  temperature: 0,
  ...extra,
});

// The SDK's final response is its own accumulation of the events (replaced by the
// response.completed object); `terminal` is the server's object from the last event.
async function streamed(body) {
  const stream = client.responses.stream(body);
  const events = [];
  for await (const e of stream) events.push(e);
  return { response: await stream.finalResponse(), terminal: events.at(-1).response, events };
}
const text = (r) =>
  r.output
    .filter((o) => o.type === "message")
    .flatMap((o) => o.content)
    .map((c) => c.text)
    .join("");

test("non-streaming and streaming agree; the SDK accepts every event", async () => {
  const r = await client.responses.create(greedy());
  assert.equal(r.object, "response");
  assert.match(r.id, /^resp_[0-9a-f]{32}$/);
  assert.ok(["completed", "incomplete"].includes(r.status), r.status);
  assert.ok(r.output_text.length > 0);
  assert.equal(text(r), r.output_text);
  assert.ok(r.usage.input_tokens > 0);
  assert.equal(typeof r.usage.input_tokens_details.cached_tokens, "number");
  assert.ok(r.usage.output_tokens >= 1 && r.usage.output_tokens <= 8);
  assert.equal(r.usage.output_tokens_details.reasoning_tokens, 0, "no reasoning without thinking");

  const { response, terminal, events } = await streamed(greedy());
  assert.equal(text(response), r.output_text);
  assert.equal(text(terminal), r.output_text);
  assert.equal(terminal.status, r.status);
  const types = events.map((e) => e.type);
  assert.equal(types[0], "response.created");
  assert.equal(types[1], "response.in_progress");
  assert.ok(["response.completed", "response.incomplete"].includes(types.at(-1)));
  for (const t of [
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
  ]) {
    assert.ok(types.includes(t), `${t} in ${types}`);
  }
  events.forEach((e, i) => assert.equal(e.sequence_number, i));
});

test("reasoning summaries stream when asked for", async () => {
  const { terminal: response, events } = await streamed({
    model: "deepseek-v4-flash",
    input: "Think",
    max_output_tokens: 6,
    reasoning: { effort: "high", summary: "auto" },
  });
  assert.ok(events.some((e) => e.type === "response.reasoning_summary_text.delta"));
  assert.equal(response.output[0].type, "reasoning");
  assert.ok(response.output[0].summary[0].text.length > 0);
  assert.equal(response.status, "incomplete");
  assert.equal(response.incomplete_details.reason, "max_output_tokens");
  // The reasoning's tokens are counted: every token until </think>, here (cut at 6 tokens) all of
  // them unless the tiny model closed its reasoning early.
  const u = response.usage;
  assert.ok(u.output_tokens_details.reasoning_tokens >= 1, JSON.stringify(u));
  assert.ok(u.output_tokens_details.reasoning_tokens <= u.output_tokens, JSON.stringify(u));
});

test("previous_response_id continues the live conversation; an unknown one is a 400", async () => {
  const first = await client.responses.create(greedy());
  const second = await client.responses.create(greedy({ previous_response_id: first.id, input: "And?" }));
  assert.ok(
    second.usage.input_tokens_details.cached_tokens >= first.usage.input_tokens,
    JSON.stringify({ first: first.usage, second: second.usage }),
  );
  await assert.rejects(client.responses.create(greedy({ previous_response_id: "resp_gone" })), (e) => {
    assert.equal(e.status, 400);
    assert.match(e.message, /resend the full input/);
    return true;
  });
});

test("function_call round trip with skipped tool types, replayed and cached", async () => {
  const body = { model: "deepseek-chat", input: "Weather in Paris for 3 days?", tools, max_output_tokens: 200 };
  const { response, events } = await streamed(body);
  assert.equal(response.status, "completed");
  const call = response.output.find((o) => o.type === "function_call");
  assert.ok(call, JSON.stringify(response.output));
  assert.match(call.call_id, /^call_[0-9a-f]{32}$/);
  assert.equal(call.name, "get_weather");
  assert.deepEqual(JSON.parse(call.arguments), { city: "Paris", days: 3 });
  assert.ok(events.some((e) => e.type === "response.function_call_arguments.delta"));
  assert.ok(events.some((e) => e.type === "response.function_call_arguments.done"));

  const second = await client.responses.create({
    ...body,
    input: [
      { type: "message", role: "user", content: [{ type: "input_text", text: body.input }] },
      ...response.output,
      { type: "function_call_output", call_id: call.call_id, output: "sunny, 21 C" },
    ],
  });
  const u = response.usage;
  assert.ok(
    second.usage.input_tokens_details.cached_tokens >= u.input_tokens + u.output_tokens - 1,
    JSON.stringify({ first: u, second: second.usage }),
  );
});
