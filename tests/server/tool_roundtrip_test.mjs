// tests/server/tool_roundtrip_test.mjs: a tool-call round trip through ds4-server and the npm
// openai SDK. The hidden --test-forced-output hook makes the tiny model emit one DSML call (its
// tokens are still evaluated by the model) written in a non-canonical spelling (" 3"); the stream
// must announce the call (id, name) before its argument deltas, and when the history comes back
// the server must render the sampled bytes exactly (trace: the second prompt starts with the
// first prompt + output) and report them as cached. With --disable-exact-dsml-tool-replay the
// history renders canonically instead, so the bytes differ and less is reused.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import {
  test,
  tempDir,
  startServer,
  FORCED_WEATHER_CALL as FORCED,
  weatherTools as tools,
} from "./harness.mjs";


// t: the calling test, whose end removes the trace's directory.
async function roundTrip(t, extraFlags) {
  const trace = join(tempDir("ds4-tools-", t), "trace.jsonl");
  const s = await startServer(["--ctx", "2048", "--trace", trace, "--test-forced-output", FORCED, ...extraFlags]);
  try {
    const client = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: "x", maxRetries: 0 });
    const messages = [{ role: "user", content: "Weather in Paris for 3 days?" }];
    const body = { model: "deepseek-chat", messages, tools, max_tokens: 200, seed: 1 };
    const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
    const order = [];
    let id = "", name = "", args = "", finish = null, usage = null, content = "";
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const c = chunk.choices[0];
      if (!c) continue;
      if (c.delta?.content) content += c.delta.content;
      for (const tc of c.delta?.tool_calls ?? []) {
        assert.equal(tc.index, 0);
        if (tc.id) {
          order.push("header");
          id = tc.id;
          name = tc.function.name;
        }
        if (tc.function?.arguments) {
          order.push("arguments");
          args += tc.function.arguments;
        }
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
    assert.equal(finish, "tool_calls");
    assert.equal(content, "");
    assert.match(id, /^call_[0-9a-f]{32}$/);
    assert.equal(name, "get_weather");
    assert.equal(order[0], "header");
    assert.ok(order.filter((o) => o === "arguments").length >= 1);
    assert.deepEqual(JSON.parse(args), { city: "Paris", days: 3 });

    const history = [
      ...messages,
      { role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name, arguments: args } }] },
      { role: "tool", tool_call_id: id, content: "sunny, 21 C" },
    ];
    const second = await client.chat.completions.create({ ...body, messages: history });
    const lines = readFileSync(trace, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(lines.length, 2);
    return { first: usage, second: second.usage, lines };
  } finally {
    await s.stop();
  }
}

test("tool call round trip replays the sampled DSML and reuses the session", async (t) => {
  const { first, second, lines } = await roundTrip(t, []);
  assert.equal(lines[0].output, FORCED);
  assert.ok(lines[1].rendered.startsWith(lines[0].rendered + lines[0].output), "byte-identical history");
  // The prompt and every sampled token but the last were evaluated and are reused.
  const cached = second.prompt_tokens_details.cached_tokens;
  assert.ok(cached >= first.prompt_tokens + first.completion_tokens - 1, `cached ${cached}`);
});

test("without exact replay the history renders canonically", async (t) => {
  const { first, second, lines } = await roundTrip(t, ["--disable-exact-dsml-tool-replay"]);
  assert.ok(!lines[1].rendered.startsWith(lines[0].rendered + lines[0].output));
  assert.ok(lines[1].rendered.includes('string="false">3</｜DSML｜parameter>'));
  assert.ok(second.prompt_tokens_details.cached_tokens < first.prompt_tokens + first.completion_tokens - 1);
});
