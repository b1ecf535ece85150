// tests/server/disk_cache_test.mjs: the disk KV cache (features.md §3) through the real
// ds4-server on loopback and the npm openai SDK, on the tiny model. A conversation resent after a
// restart is served from disk (cached tokens = the file's tokens, only the rest evaluated); a
// session switch A -> B -> A reloads A from disk; the tool-id map survives a restart (a history
// with reordered JSON arguments still renders the sampled bytes), also from a file that is not the
// one loaded; the space budget holds under eviction; concurrent requests that switch sessions save
// and load without damage; hostile files are skipped; a size-limited process (ulimit -f: a full
// disk) fails its saves and keeps serving.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import {
  test,
  tempDir,
  startServer,
  health,
  waitIdle,
  FORCED_WEATHER_CALL as FORCED,
  weatherTools as tools,
} from "./harness.mjs";

const SYSTEM_A =
  "You are a careful assistant for the Paris weather office. Answer in one short sentence, cite " +
  "the station, never invent numbers, and keep every reply polite and brief. ".repeat(4);
const SYSTEM_B =
  "You translate English into French for a shipping company. Keep the original line breaks, " +
  "keep product codes unchanged, and answer with the translation only. ".repeat(4);

// One live session: every conversation switch replaces it, so these tests see the disk cache's
// evict saves and loads (a larger pool would keep the conversations live).
function kvFlags(dir, extra = []) {
  return [
    "--ctx", "2048", "--prefill-chunk", "64", "--parallel", "1", "--kv-disk-dir", dir,
    "--kv-cache-min-tokens", "32", "--kv-cache-boundary-align-tokens", "16",
    "--kv-cache-boundary-trim-tokens", "4", ...extra,
  ];
}

// The cache files of `dir` with the header fields the tests look at (docs/kvcache.md).
const REASONS = ["unknown", "cold", "continued", "evict", "shutdown"];
function kvFiles(dir) {
  return readdirSync(dir)
    .filter((n) => /^[0-9a-f]{40}\.kv$/.test(n))
    .map((name) => {
      const b = readFileSync(join(dir, name));
      return {
        name,
        bytes: b.length,
        reason: REASONS[b[5]],
        flags: b[6],
        tokens: b.readUInt32LE(8),
        hits: b.readUInt32LE(12),
        text: b.subarray(52, 52 + b.readUInt32LE(48)).toString("utf8"),
      };
    });
}

// Waits until the writer has handled `n` checkpoints (written, failed or dropped). Saves are
// asynchronous (the scheduler never waits on the disk) and a lookup sees only written files, so a
// test whose next request must find a file waits for it here first: on a busy disk (a build's
// writeback, the 6.5 GB model fixture) one fsync can take seconds, and the file is not there yet.
async function waitSaves(base, n, limitMs = 60000) {
  const t0 = Date.now();
  for (;;) {
    const d = (await health(base)).kv_disk;
    if (d.saved + d.failed + d.dropped >= n) return d;
    if (Date.now() - t0 > limitMs) throw new Error(`saves ${JSON.stringify(d)} < ${n}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function client(s) {
  return new OpenAI({ baseURL: `${s.base}/v1`, apiKey: "x", maxRetries: 0 });
}

async function ask(s, messages, extra = {}) {
  return client(s).chat.completions.create({ model: "deepseek-chat", messages, max_tokens: 6, seed: 1, ...extra });
}

const cached = (r) => r.usage.prompt_tokens_details.cached_tokens;
const hitTokens = (log) => [...log.matchAll(/kv cache hit text tokens=(\d+)/g)].map((m) => Number(m[1]));

test("a conversation resent after a restart is served from disk", async (t) => {
  const dir = tempDir("ds4-kvc-", t);
  const conv = [
    { role: "system", content: SYSTEM_A },
    { role: "user", content: "What is the weather today?" },
  ];
  const s1 = await startServer(kvFlags(dir));
  let first;
  try {
    first = await ask(s1, conv);
    assert.equal(cached(first), 0);
  } finally {
    await s1.stop();
  }
  const files = kvFiles(dir);
  const cold = files.find((f) => f.reason === "cold");
  assert.ok(cold, `a cold file: ${JSON.stringify(files.map((f) => f.reason))}`);
  assert.ok(files.some((f) => f.reason === "shutdown"), "the live session saved on shutdown");
  // The cold save stops before the final user task, so it serves the system prompt.
  assert.ok(cold.text.includes(SYSTEM_A.slice(0, 40)) && !cold.text.includes("weather today"));
  assert.ok(cold.tokens < first.usage.prompt_tokens);

  const s2 = await startServer(kvFlags(dir));
  try {
    const again = await ask(s2, conv);
    assert.equal(cached(again), cold.tokens, "the cold file's tokens are reused");
    assert.equal(again.usage.prompt_tokens, first.usage.prompt_tokens);
    assert.deepEqual(hitTokens(s2.stderr()), [cold.tokens]);
    // Only the suffix was evaluated: the server's own count of evaluated tokens.
    assert.match(s2.stderr(), new RegExp(`prompt=${again.usage.prompt_tokens} cached=${cold.tokens} `));
    // A follow-up turn continues from the restarted session (the live one, now).
    const next = await ask(s2, [...conv, { role: "assistant", content: again.choices[0].message.content ?? "" }, { role: "user", content: "And tomorrow?" }]);
    assert.ok(cached(next) >= cold.tokens);
  } finally {
    await s2.stop();
  }
  assert.ok(kvFiles(dir).find((f) => f.name === cold.name).hits >= 1, "the hit is recorded");
});

test("a session switch A -> B -> A reloads A from disk", async (t) => {
  const dir = tempDir("ds4-kvc-", t);
  const a = [
    { role: "system", content: SYSTEM_A },
    { role: "user", content: "Is it raining?" },
  ];
  const b = [
    { role: "system", content: SYSTEM_B },
    { role: "user", content: "Good morning, the parcel is late." },
  ];
  const s = await startServer(kvFlags(dir));
  try {
    const a1 = await ask(s, a);
    const b1 = await ask(s, b);
    assert.equal(cached(b1), 0);
    await waitSaves(s.base, 3);  // cold A, evict A, cold B
    const reasons = kvFiles(dir).map((f) => f.reason).sort();
    assert.deepEqual(reasons, ["cold", "cold", "evict"]);
    const a2 = await ask(s, [...a, { role: "assistant", content: a1.choices[0].message.content ?? "" }, { role: "user", content: "Thanks!" }]);
    const coldA = kvFiles(dir).find((f) => f.reason === "cold" && f.text.includes(SYSTEM_A.slice(0, 40)));
    assert.ok(cached(a2) >= coldA.tokens, `A reused from disk: cached ${cached(a2)}`);
    assert.ok(hitTokens(s.stderr()).length === 1);
    await waitSaves(s.base, 4);  // + evict B
    assert.ok(kvFiles(dir).some((f) => f.reason === "evict" && f.text.includes(SYSTEM_B.slice(0, 40))));
  } finally {
    await s.stop();
  }
});


test("the tool-id map survives a restart: reordered arguments still render the sampled bytes", async (t) => {
  const dir = tempDir("ds4-kvc-", t);
  const trace1 = join(dir, "trace1.jsonl"), trace2 = join(dir, "trace2.jsonl");  // not *.kv: ignored
  const messages = [{ role: "user", content: "Weather in Paris for 3 days?" }];
  const s1 = await startServer(kvFlags(dir, ["--trace", trace1, "--test-forced-output", FORCED]));
  let call;
  try {
    const r = await ask(s1, messages, { tools, max_tokens: 200 });
    assert.equal(r.choices[0].finish_reason, "tool_calls");
    call = r.choices[0].message.tool_calls[0];
    assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris", days: 3 });
  } finally {
    await s1.stop();
  }
  const shutdown = kvFiles(dir).find((f) => f.reason === "shutdown");
  assert.ok(shutdown && (shutdown.flags & 1) === 1, "the shutdown file carries a tool-id map");

  const s2 = await startServer(kvFlags(dir, ["--trace", trace2]));
  try {
    // The client re-serialises the arguments in another key order (and without the " 3").
    const history = [
      ...messages,
      { role: "assistant", content: null, tool_calls: [{ id: call.id, type: "function", function: { name: "get_weather", arguments: '{"days":3,"city":"Paris"}' } }] },
      { role: "tool", tool_call_id: call.id, content: "sunny, 21 C" },
    ];
    const r2 = await ask(s2, history, { tools, max_tokens: 4 });
    const lines = [trace1, trace2].map((t) => JSON.parse(readFileSync(t, "utf8").trim()));
    assert.equal(lines[0].output, FORCED);
    assert.ok(lines[1].rendered.startsWith(lines[0].rendered + lines[0].output), "the sampled bytes, exactly");
    assert.equal(cached(r2), shutdown.tokens, "served from the shutdown file");
  } finally {
    await s2.stop();
  }
});

test("tool-id maps come from every file, also one that is not loaded", async (t) => {
  // The first server has a larger context: its files cannot load into the second (a file's
  // context must not exceed the session's), but their tool-id maps still apply (§3.2).
  const dir = tempDir("ds4-kvc-", t);
  const trace1 = join(dir, "trace1.jsonl"), trace2 = join(dir, "trace2.jsonl");
  const messages = [{ role: "user", content: "Weather in Paris for 3 days?" }];
  const big = kvFlags(dir, ["--trace", trace1, "--test-forced-output", FORCED]).map((a) => (a === "2048" ? "4096" : a));
  const s1 = await startServer(big);
  let call;
  try {
    const r = await ask(s1, messages, { tools, max_tokens: 200 });
    call = r.choices[0].message.tool_calls[0];
  } finally {
    await s1.stop();
  }
  assert.ok(kvFiles(dir).every((f) => readFileSync(join(dir, f.name)).readUInt32LE(16) === 4096));
  const s2 = await startServer(kvFlags(dir, ["--trace", trace2]));
  try {
    const history = [
      ...messages,
      { role: "assistant", content: null, tool_calls: [{ id: call.id, type: "function", function: { name: "get_weather", arguments: '{"days":3,"city":"Paris"}' } }] },
      { role: "tool", tool_call_id: call.id, content: "cloudy" },
    ];
    const r2 = await ask(s2, history, { tools, max_tokens: 3 });
    assert.equal(cached(r2), 0, "no file of a 4096 context loads into a 2048 one");
    const [l1, l2] = [trace1, trace2].map((t) => JSON.parse(readFileSync(t, "utf8").trim()));
    assert.ok(l2.rendered.startsWith(l1.rendered + FORCED), "the sampled bytes, from the unused file's map");
  } finally {
    await s2.stop();
  }
});

test("eviction keeps the directory within the space budget", async (t) => {
  const dir = tempDir("ds4-kvc-", t);
  const s = await startServer(kvFlags(dir, ["--kv-disk-space-mb", "2"]));
  try {
    for (let i = 0; i < 5; i++) {
      await ask(s, [
        { role: "system", content: `Session ${i}. ` + SYSTEM_B },
        { role: "user", content: `Line ${i}: the order ships today.` },
      ]);
      // Each request's saves (evict the previous session, cold this one) are written before the
      // next: a writer more than max_pending behind would drop checkpoints.
      await waitSaves(s.base, 2 * i + 1);
    }
    const d = await waitSaves(s.base, 9);  // five cold, four evict
    assert.ok(d.saved >= 9, JSON.stringify(d));
    const files = kvFiles(dir);
    const total = files.reduce((n, f) => n + f.bytes, 0);
    assert.ok(total <= 2 << 20, `${total} bytes in ${files.length} files`);
    assert.ok(files.length < d.saved, "older files were evicted");
    assert.equal(d.bytes, total);
    assert.match(s.stderr(), /kv cache: evicting /);
  } finally {
    await s.stop();
  }
  const after = kvFiles(dir).reduce((n, f) => n + f.bytes, 0);
  assert.ok(after <= 2 << 20, `after shutdown: ${after}`);
});

test("concurrent requests that switch sessions save and load without damage", async (t) => {
  const dir = tempDir("ds4-kvc-", t);
  const convs = [SYSTEM_A, SYSTEM_B, "You summarise train timetables. ".repeat(12)].map((sys, i) => [
    { role: "system", content: sys },
    { role: "user", content: `Question ${i}?` },
  ]);
  const s = await startServer(kvFlags(dir));
  try {
    // Warm the cache with one of each, then fire twelve at once, interleaved.
    for (const c of convs) await ask(s, c);
    await waitSaves(s.base, 5);  // cold A, evict A, cold B, evict B, cold C: each one is on disk
    const all = await Promise.all(Array.from({ length: 12 }, (_, i) => ask(s, convs[i % 3])));
    for (const r of all) assert.equal(r.choices[0].finish_reason === "length" || r.choices[0].finish_reason === "stop", true);
    // Every switch found the other conversation on disk or live.
    assert.ok(all.every((r) => cached(r) > 0), JSON.stringify(all.map(cached)));
    assert.ok(hitTokens(s.stderr()).length >= 6);
    await waitIdle(s.base);
  } finally {
    await s.stop();
  }
  assert.doesNotMatch(s.stderr(), /skipping|removing|save failed/);
  // A restart indexes every file the run left, none damaged.
  const s2 = await startServer(kvFlags(dir));
  try {
    const r = await ask(s2, convs[2]);
    assert.ok(cached(r) > 0);
  } finally {
    await s2.stop();
  }
  assert.doesNotMatch(s2.stderr(), /skipping|removing/);
});

test("damaged and hostile cache files are skipped and never poison a session", async (t) => {
  const dir = tempDir("ds4-kvc-", t);
  const conv = [
    { role: "system", content: SYSTEM_A },
    { role: "user", content: "Wind speed?" },
  ];
  const s1 = await startServer(kvFlags(dir));
  let good;
  try {
    good = await ask(s1, conv);
  } finally {
    await s1.stop();
  }
  const cold = kvFiles(dir).find((f) => f.reason === "cold");
  const path = join(dir, cold.name);
  const original = readFileSync(path);
  const payloadAt = 52 + original.readUInt32LE(48);
  // [damage, logged]: files another model or a larger context wrote are valid, just not used.
  const damage = {
    truncated: [(b) => b.subarray(0, b.length - 100), true],
    "bad magic": [(b) => { b[0] = 0x58; return b; }, true],
    "lying payload size": [(b) => { b.writeBigUInt64LE(BigInt(b.length), 40); return b; }, true],
    "another model": [(b) => { b[7] = 1; return b; }, false],
    "a larger context": [(b) => { b.writeUInt32LE(1 << 20, 16); return b; }, false],
    "payload of another shape": [(b) => { b.writeUInt32LE(b.readUInt32LE(payloadAt + 32) + 1, payloadAt + 32); return b; }, true],
    "bad row count": [(b) => { b.writeUInt32LE(0xffffffff, payloadAt + 48); return b; }, true],
    "garbage text hash": [(b) => { b[52] ^= 1; return b; }, true],
  };
  for (const [what, [f, logged]] of Object.entries(damage)) {
    writeFileSync(path, f(Buffer.from(original)));
    const s = await startServer(kvFlags(dir));
    try {
      const r = await ask(s, conv);
      assert.equal(cached(r), 0, `${what}: nothing reused`);
      assert.equal(r.choices[0].message.content, good.choices[0].message.content, `${what}: same output`);
      await waitSaves(s.base, 1);  // r's cold save, which `again` loads
      const again = await ask(s, conv);  // the session is sound: the next request reuses it
      assert.ok(cached(again) > 0, what);
    } finally {
      await s.stop();
    }
    if (logged) assert.match(s.stderr(), /kv cache: (skipping|removing)/, `${what}: logged`);
  }
});

test("a full disk fails the save, keeps older files and keeps serving", async (t) => {
  const dir = tempDir("ds4-kvc-", t);
  const s1 = await startServer(kvFlags(dir));
  try {
    await ask(s1, [{ role: "system", content: SYSTEM_A }, { role: "user", content: "Fog?" }]);
  } finally {
    await s1.stop();
  }
  const before = kvFiles(dir);
  const bytes = Object.fromEntries(before.map((f) => [f.name, readFileSync(join(dir, f.name))]));
  // Writes past 64 KiB fail with EFBIG: every cache file is larger.
  assert.ok(before.every((f) => f.bytes > 64 << 10));
  const s2 = await startServer(kvFlags(dir), { fileLimitKb: 64 });
  try {
    const r1 = await ask(s2, [{ role: "system", content: SYSTEM_B }, { role: "user", content: "Hello there." }]);
    assert.equal(cached(r1), 0);
    const d = await waitSaves(s2.base, 1);
    assert.ok(d.failed >= 1 && d.saved === 0, JSON.stringify(d));
    const r2 = await ask(s2, [{ role: "system", content: SYSTEM_A }, { role: "user", content: "Fog?" }]);
    assert.ok(cached(r2) > 0, "older files still load");
  } finally {
    await s2.stop();
  }
  assert.match(s2.stderr(), /kv cache: save failed/);
  // Intact but for the header's hit count and last-use time (bytes 12-15 and 32-39).
  for (const [name, b] of Object.entries(bytes)) {
    const now = readFileSync(join(dir, name));
    assert.equal(now.length, b.length, name);
    assert.ok(now.subarray(40).equals(b.subarray(40)) && now.subarray(0, 12).equals(b.subarray(0, 12)), `${name} intact`);
  }
  assert.deepEqual(readdirSync(dir).filter((n) => n.includes(".tmp.")), [], "no temporary file left");
  assert.ok(statSync(dir).isDirectory());
});

// features.md §3.1, §3.3, §2.7: a Responses turn that reasoned is saved (shutdown) under the
// visible transcript the client sends back -- the reasoning dropped -- with header bit 1, and
// after a restart the client's next request of that conversation is served from that file: its
// cached tokens are the whole first turn, reasoning included, not just the cold prefix.
test("a reasoning Responses turn is saved under its visible transcript and reloaded after a restart", async (t) => {
  const dir = tempDir("ds4-kvc-", t);
  const answer = "Light rain in Paris.";
  const forced = "I read the station log first.</think>" + answer + "<｜end▁of▁sentence｜>";
  const flags = kvFlags(dir, ["--test-forced-output", forced]);
  const rclient = (s) => client(s).responses;
  const body = { model: "deepseek-reasoner", instructions: SYSTEM_A, tools: [
    { type: "function", name: "get_weather", description: "Weather for a city",
      parameters: { type: "object", properties: { city: { type: "string" } } } },
  ], max_output_tokens: 100 };
  const s1 = await startServer(flags);
  let first;
  try {
    first = await rclient(s1).create({ ...body, input: "Is it raining?" });
    assert.equal(first.status, "completed", JSON.stringify(first.output));
    assert.equal(first.output_text, answer);
  } finally {
    await s1.stop();
  }
  const shutdown = kvFiles(dir).find((f) => f.reason === "shutdown");
  assert.ok(shutdown, JSON.stringify(kvFiles(dir).map((f) => f.reason)));
  assert.equal(shutdown.flags & 0x06, 0x02, "keyed by a Responses-visible transcript");
  assert.ok(shutdown.text.endsWith("</think>" + answer), shutdown.text.slice(-80));
  assert.ok(!shutdown.text.includes("station log first"), "the key has no reasoning");
  assert.equal(shutdown.tokens, first.usage.input_tokens + first.usage.output_tokens - 1);

  const s2 = await startServer(flags);
  try {
    const next = await rclient(s2).create({
      ...body,
      input: [
        { type: "message", role: "user", content: [{ type: "input_text", text: "Is it raining?" }] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: answer }] },
        { type: "message", role: "user", content: [{ type: "input_text", text: "And tomorrow?" }] },
      ],
    });
    assert.equal(next.usage.input_tokens_details.cached_tokens, shutdown.tokens, s2.stderr());
    assert.match(s2.stderr(), /kv cache hit text tokens=\d+ text=\d+ quant=2 key=responses-visible /);
  } finally {
    await s2.stop();
  }
});
