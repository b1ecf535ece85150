// tests/server/openai_sdk_test.mjs: ds4-server on the tiny model (CPU, loopback) driven by the
// real npm `openai` SDK: models, non-streaming and streaming chat (the same seed gives the same
// text both ways), reasoning in thinking mode, usage with cached tokens when a conversation
// continues, stop sequences, completions, OpenAI-style errors, a client aborting mid-stream
// (the request stops within a token and the server keeps serving), 16 concurrent clients, the
// bounded queue's 429, the API key, the body limit, --mtp drafting (the same greedy text, drafts
// counted in usage and the trace), and a clean SIGTERM exit (also mid-stream).
import { before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test, startServer, waitIdle, health, tempDir } from "./harness.mjs";

let main;
let client;
const chat = (extra) => ({
  model: "deepseek-chat",
  messages: [{ role: "user", content: "Hello there" }],
  max_tokens: 8,
  seed: 11,
  ...extra,
});

before(async () => {
  main = await startServer(["--ctx", "512", "--prefill-chunk", "64"]);
  client = new OpenAI({ baseURL: `${main.base}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => main && main.stop());

async function collect(stream) {
  const out = { content: "", reasoning: "", finish: null, usage: null, chunks: 0 };
  for await (const chunk of stream) {
    out.chunks++;
    if (chunk.usage) out.usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta?.content) out.content += c.delta.content;
      if (c.delta?.reasoning_content) out.reasoning += c.delta.reasoning_content;
      if (c.finish_reason) out.finish = c.finish_reason;
    }
  }
  return out;
}

test("models list and aliases", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ["deepseek-v4-flash", "deepseek-v4-pro"]);
  const pro = await client.models.retrieve("deepseek-v4-pro");
  assert.equal(pro.context_length, 512);
  await assert.rejects(client.models.retrieve("gpt-4o"), (e) => e.status === 404);
});

test("non-streaming and streaming chat agree for one seed", async () => {
  const r = await client.chat.completions.create(chat());
  const msg = r.choices[0].message;
  assert.equal(msg.role, "assistant");
  assert.ok(msg.content.length > 0);
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.model, "deepseek-chat");
  assert.ok(["length", "stop"].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 8);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);

  const s = await collect(
    await client.chat.completions.create(chat({ stream: true, stream_options: { include_usage: true } })),
  );
  assert.equal(s.content, msg.content);
  assert.equal(s.finish, r.choices[0].finish_reason);
  assert.equal(s.usage.completion_tokens, r.usage.completion_tokens);
  assert.equal(s.usage.prompt_tokens, r.usage.prompt_tokens);
});

test("thinking mode streams reasoning_content, never mixed into content", async () => {
  const body = { model: "deepseek-v4-flash", messages: [{ role: "user", content: "Think" }], max_tokens: 6, seed: 5 };
  const s = await collect(await client.chat.completions.create({ ...body, stream: true }));
  const r = await client.chat.completions.create(body);
  assert.ok(s.reasoning.length > 0, "reasoning deltas");
  assert.equal(r.choices[0].message.reasoning_content, s.reasoning);
  assert.equal(r.choices[0].message.content, s.content);
  assert.ok(!s.content.includes("</think>"));
});

test("a continued conversation reports cached tokens", async () => {
  const messages = [{ role: "user", content: "Tell me a story" }];
  const first = await client.chat.completions.create(chat({ messages, max_tokens: 6 }));
  const second = await client.chat.completions.create(
    chat({
      messages: [...messages, first.choices[0].message, { role: "user", content: "And then?" }],
      max_tokens: 4,
    }),
  );
  const cached = second.usage.prompt_tokens_details.cached_tokens;
  assert.ok(cached >= first.usage.prompt_tokens, `cached ${cached} < ${first.usage.prompt_tokens}`);
  assert.ok(cached < second.usage.prompt_tokens);
});

test("stop sequences cut the text and finish with stop", async () => {
  const base = chat({ max_tokens: 24, seed: 21 });
  const full = (await client.chat.completions.create(base)).choices[0].message.content;
  const chars = [...full];
  assert.ok(chars.length >= 6, `need a longer sample: ${JSON.stringify(full)}`);
  const stop = chars.slice(3, 5).join("");
  const expected = full.slice(0, full.indexOf(stop));
  const r = await client.chat.completions.create({ ...base, stop: [stop, "never-appears"] });
  assert.equal(r.choices[0].message.content, expected);
  assert.equal(r.choices[0].finish_reason, "stop");
  const s = await collect(await client.chat.completions.create({ ...base, stop, stream: true }));
  assert.equal(s.content, expected);
  assert.equal(s.finish, "stop");
});

test("completions return raw text", async () => {
  const r = await client.completions.create({ model: "deepseek-v4-flash", prompt: "Once", max_tokens: 5, seed: 2 });
  assert.equal(r.object, "text_completion");
  assert.ok(r.choices[0].text.length > 0);
  assert.ok(r.usage.completion_tokens <= 5);
  let text = "";
  for await (const c of await client.completions.create({
    model: "deepseek-v4-flash", prompt: "Once", max_tokens: 5, seed: 2, stream: true,
  })) {
    text += c.choices[0]?.text ?? "";
  }
  assert.equal(text, r.choices[0].text);
});

test("bad requests get OpenAI-style errors and the server keeps serving", async () => {
  const post = (body) =>
    fetch(`${main.base}/v1/chat/completions`, { method: "POST", body, headers: { "content-type": "application/json" } });
  const bad = await post("{not json");
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.type, "invalid_request_error");
  await assert.rejects(client.chat.completions.create(chat({ messages: [] })), (e) => e.status === 400);
  await assert.rejects(
    client.chat.completions.create(chat({ messages: [{ role: "wizard", content: "x" }] })),
    (e) => e.status === 400 && /wizard/.test(e.message),
  );
  await assert.rejects(client.chat.completions.create(chat({ temperature: "hot" })), (e) => e.status === 400);
  await assert.rejects(client.chat.completions.create(chat({ model: "gpt-4o" })), (e) => e.status === 404);
  const long = "word ".repeat(700);
  await assert.rejects(
    client.chat.completions.create(chat({ messages: [{ role: "user", content: long }] })),
    (e) => e.status === 400 && e.code === "context_length_exceeded" && /512 tokens/.test(e.message),
  );
  const nowhere = await fetch(`${main.base}/v2/anything`);
  assert.equal(nowhere.status, 404);
  assert.ok((await nowhere.json()).error.message);
  const r = await client.chat.completions.create(chat({ max_tokens: 2 }));
  assert.equal(r.usage.completion_tokens <= 2, true);
});

test("a client aborting mid-stream cancels its request", async () => {
  const ac = new AbortController();
  const stream = await client.chat.completions.create(chat({ max_tokens: 400, stream: true }), { signal: ac.signal });
  let chunks = 0;
  try {
    for await (const _ of stream) if (++chunks === 3) ac.abort();
  } catch (e) {
    assert.ok(e.name === "APIUserAbortError" || e.name === "AbortError", `unexpected ${e}`);
  }
  assert.ok(chunks >= 3 && chunks < 20, `${chunks} chunks after the abort`);
  assert.ok((await health(main.base)).running <= 1);
  const ms = await waitIdle(main.base);
  // 400 tokens take seconds on the tiny model; a cancelled request ends within a token.
  assert.ok(ms < 1500, `took ${ms} ms to stop`);
  const r = await client.chat.completions.create(chat({ max_tokens: 3 }));
  assert.equal(r.choices[0].message.role, "assistant");
});

test("16 concurrent clients all get their answers", async () => {
  const jobs = [];
  for (let i = 0; i < 16; i++) {
    const body = chat({ seed: 100 + i, max_tokens: 4, messages: [{ role: "user", content: `client ${i}` }] });
    jobs.push(
      i % 2
        ? client.chat.completions.create(body).then((r) => r.usage.completion_tokens)
        : client.chat.completions
            .create({ ...body, stream: true, stream_options: { include_usage: true } })
            .then(collect)
            .then((s) => s.usage.completion_tokens),
    );
  }
  const counts = await Promise.all(jobs);
  assert.equal(counts.length, 16);
  for (const n of counts) assert.ok(n >= 1 && n <= 4);
});

test("beyond the bounded queue requests get 429", async () => {
  // One session, so the second request waits.
  const s = await startServer(["--ctx", "4096", "--max-queue", "1", "--parallel", "1"]);
  try {
    const c = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: "x", maxRetries: 0 });
    const ac = new AbortController();
    const long = chat({ max_tokens: 3000, stream: true });
    const running = await c.chat.completions.create(long, { signal: ac.signal });
    // The stream's first bytes come before the scheduler admits it: wait until it runs.
    const until = async (what, ok) => {
      for (let i = 0; !ok(await health(s.base)); i++) {
        assert.ok(i < 500, what);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    await until("first request never ran", (h) => h.running === 1 && h.queued === 0);
    // Its outcome is kept at once (no unhandled rejection): it must wait, not be refused.
    const waiting = c.chat.completions.create(long, { signal: ac.signal }).then(
      () => null,
      (e) => e,
    );
    await until("second request never queued", (h) => h.queued === 1);
    await assert.rejects(c.chat.completions.create(chat()), (e) => e.status === 429 && e.error?.type === "rate_limit_error");
    ac.abort();
    const second = await waiting;
    assert.ok(second === null || second.status !== 429, `the waiting request was refused: ${second}`);
    await waitIdle(s.base);
  } finally {
    await s.stop();
  }
});

test("--api-key and --max-body", async () => {
  const s = await startServer(["--ctx", "256", "--api-key", "sekret", "--max-body", "2000", "--cors"]);
  try {
    const wrong = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: "guess", maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (e) => e.status === 401);
    const right = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: "sekret", maxRetries: 0 });
    const r = await right.chat.completions.create(chat({ max_tokens: 2 }));
    assert.ok(r.usage.completion_tokens >= 1);
    assert.equal((await fetch(`${s.base}/health`)).status, 200); // health needs no key
    // The scheme's case does not matter (RFC 9110); the key's does.
    const models = (auth) => fetch(`${s.base}/v1/models`, { headers: { authorization: auth } });
    assert.equal((await models("bearer sekret")).status, 200);
    assert.equal((await models("BEARER  sekret")).status, 200);
    assert.equal((await models("Bearer SEKRET")).status, 401);
    assert.equal((await models("Basic sekret")).status, 401);
    const big = await fetch(`${s.base}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer sekret", "content-type": "application/json" },
      body: JSON.stringify(chat({ messages: [{ role: "user", content: "x".repeat(5000) }] })),
    });
    assert.equal(big.status, 413);
    assert.equal((await big.json()).error.code, "request_too_large");
    const pre = await fetch(`${s.base}/v1/chat/completions`, { method: "OPTIONS" });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get("access-control-allow-origin"), "*");
  } finally {
    await s.stop();
  }
});

test("--mtp: greedy answers are the same, usage and the trace count the drafts", async (t) => {
  const dir = tempDir("ds4-mtp-", t);
  const trace = join(dir, "trace.jsonl");
  const s = await startServer([
    "--ctx", "512", "--mtp", process.env.DS4_SERVER_MTP, "--mtp-draft", "2", "--mtp-margin", "0",
    "--trace", trace,
  ]);
  try {
    const c = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: "x", maxRetries: 0 });
    const want = await client.chat.completions.create(chat({ temperature: 0, max_tokens: 12 }));
    const got = await c.chat.completions.create(chat({ temperature: 0, max_tokens: 12 }));
    assert.equal(got.choices[0].message.content, want.choices[0].message.content);
    assert.equal(want.usage.ds4_mtp, undefined); // no drafts, no extension
    const m = got.usage.ds4_mtp;
    assert.ok(m.steps > 0 && m.draft_tokens >= m.steps && m.accepted_draft_tokens >= 0, JSON.stringify(m));
    const streamed = await collect(
      await c.chat.completions.create(
        chat({ temperature: 0, max_tokens: 12, stream: true, stream_options: { include_usage: true } }),
      ),
    );
    assert.equal(streamed.content, want.choices[0].message.content);
    assert.ok(streamed.usage.ds4_mtp.steps > 0);
    const lines = readFileSync(trace, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(lines.length, 2);
    assert.equal(lines[0].draft_steps, m.steps);
    assert.equal(lines[0].draft_tokens, m.draft_tokens);
    assert.equal(lines[0].accepted_draft_tokens, m.accepted_draft_tokens);
  } finally {
    await s.stop();
  }
});

test("SIGTERM during a stream ends it and the server exits 0", async () => {
  const s = await startServer(["--ctx", "8192"]);
  const c = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: "x", maxRetries: 0 });
  const stream = await c.chat.completions.create(chat({ max_tokens: 8000, stream: true }));
  const it = stream[Symbol.asyncIterator]();
  await it.next();
  const t0 = Date.now();
  const stopped = s.stop(); // asserts exit code 0
  let more = 0;
  try {
    while (!(await it.next()).done) more++;
  } catch {
    // a connection closed mid-stream is an acceptable end
  }
  await stopped;
  assert.ok(more < 8000, "the stream was cut short");
  assert.ok(Date.now() - t0 < 10000, "stopping took too long");
});
