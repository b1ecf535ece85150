// tests/server/churn_test.mjs: client churn on the CPU backend. A real ds4-server (tiny model,
// loopback, its default pool of sessions) takes 100 clients that connect and disconnect at random
// over a bounded window (CHURN_WINDOW_MS, 15 s: long enough that every kind of client overlaps
// every other and the pool is full and queueing, short enough for CI on 2 cores): the real
// `openai` SDK streaming to the end, streaming and aborting after a few chunks, aborting while
// still queued or prefilling, non-streaming, and raw sockets that close before or in the middle
// of a request. Afterwards the server holds no leaked session (/health: nothing running or
// queued, every session free), its thread count (/proc/PID/task) is back to what it was after
// the warm-up, its RSS grew by less than a bound (RSS_GROWTH_LIMIT), and a fixed-seed request
// answers exactly as it did before the churn.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import OpenAI from "openai";
import { test, startServer, health, waitIdle } from "./harness.mjs";
import { rng } from "./soak_cases.mjs"; // mulberry32: the same run every time

const CLIENTS = 100;
const CHURN_WINDOW_MS = 15000;
// The warm-up already ran batches as large as the churn's (activations are grown once), so
// what remains is allocator noise; a leaked request or session would show as steady growth
// (each session at --ctx 1024 is several MiB of KV state on the tiny shape).
const RSS_GROWTH_LIMIT = 48 << 20;
// Under a sanitizer (make test-asan / test-tsan set these for ctest) RSS is not a leak signal:
// ASan's quarantine keeps up to 256 MiB of freed blocks on purpose and TSan's shadow grows with
// every address touched. There LeakSanitizer (detect_leaks=1, at the server's exit) checks the
// heap instead, and the session and thread checks still run.
const SANITIZED = Boolean(process.env.ASAN_OPTIONS || process.env.TSAN_OPTIONS);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const threads = (pid) => readdirSync(`/proc/${pid}/task`).length;
const rss = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) * 1024;
const body = (i, extra) => ({
  model: "deepseek-chat",
  messages: [{ role: "user", content: `client ${i}: ${"tell me more ".repeat(1 + (i % 7))}` }],
  max_tokens: 8,
  seed: 1000 + i,
  ...extra,
});

async function streamTo(client, b, stopAfter, signal) {
  const ac = new AbortController();
  if (signal) signal.addEventListener("abort", () => ac.abort());
  let chunks = 0;
  try {
    const stream = await client.chat.completions.create({ ...b, stream: true }, { signal: ac.signal });
    // After an abort the SDK's iterator may just end: what counts is that the client left.
    for await (const _ of stream) if (++chunks === stopAfter) ac.abort();
    return { kind: ac.signal.aborted ? "aborted" : "complete", chunks };
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIUserAbortError || e.name === "AbortError", `unexpected ${e.name}: ${e}`);
    return { kind: "aborted", chunks };
  }
}

// A raw TCP client: connects, maybe writes part of a request, and goes away.
function rawSocket(port, partial) {
  return new Promise((resolve) => {
    const sock = net.connect(port, "127.0.0.1", () => {
      if (partial) sock.write("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 400\r\n\r\n{\"mod");
      setTimeout(() => sock.destroy(), partial ? 30 : 5);
    });
    sock.on("error", () => {});
    sock.on("close", () => resolve({ kind: partial ? "partial" : "connect" }));
  });
}

async function client(server, c, i, rand) {
  const r = rand();
  if (r < 0.3) return streamTo(c, body(i, { max_tokens: 4 + (i % 5) }), 0); // to the end
  if (r < 0.55) return streamTo(c, body(i, { max_tokens: 200 }), 1 + Math.floor(rand() * 4)); // leaves mid-stream
  if (r < 0.7) {
    // Leaves before its first token: while it waits for a session or its prompt is prefilled.
    const ac = new AbortController();
    setTimeout(() => ac.abort(), Math.floor(rand() * 40));
    return streamTo(c, body(i, { max_tokens: 200 }), 0, ac.signal);
  }
  if (r < 0.85) {
    const res = await c.chat.completions.create(body(i, { max_tokens: 3 }));
    assert.ok(res.usage.completion_tokens >= 1 && res.usage.completion_tokens <= 3);
    return { kind: "complete" };
  }
  return rawSocket(server.port, r < 0.93);
}

test("100 clients churning leave no leaked session, thread or memory", async () => {
  const s = await startServer(["--ctx", "1024", "--max-queue", "256"]);
  try {
    const c = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: "x", maxRetries: 0 });
    const h0 = await health(s.base);
    assert.ok(h0.sessions >= 1 && h0.free === h0.sessions, JSON.stringify(h0));
    assert.match(s.stderr(), /ds4-server: \d+ sessions of 1024 tokens .*MiB of KV state each/);
    // Warm-up: one fixed-seed answer to compare with at the end, then a full pool at once so the
    // step buffers reach their size before the baseline is taken.
    const reference = await c.chat.completions.create(body(0, { max_tokens: 12 }));
    await Promise.all(
      Array.from({ length: h0.sessions + 2 }, (_, i) => c.chat.completions.create(body(500 + i))),
    );
    await waitIdle(s.base);
    await sleep(2500); // keep-alive connections close after 2 s
    const threads0 = threads(s.pid);
    const rss0 = rss(s.pid);

    const rand = rng(26);
    const t0 = Date.now();
    const jobs = [];
    let maxRunning = 0;
    const sampler = setInterval(async () => {
      const h = await health(s.base).catch(() => null);
      if (h) maxRunning = Math.max(maxRunning, h.running);
    }, 50);
    for (let i = 0; i < CLIENTS; i++) {
      const start = Math.floor(rand() * CHURN_WINDOW_MS);
      const seed = Math.floor(rand() * 2 ** 31);
      jobs.push(sleep(start).then(() => client(s, c, i, rng(seed))));
    }
    // Every client settles (a failure is reported after the others end, never left running).
    const settled = await Promise.allSettled(jobs);
    clearInterval(sampler);
    const failed = settled.filter((r) => r.status === "rejected");
    assert.equal(failed.length, 0, failed.map((r) => String(r.reason)).join("\n"));
    const results = settled.map((r) => r.value);
    const kinds = {};
    for (const r of results) kinds[r.kind] = (kinds[r.kind] ?? 0) + 1;
    const elapsed = Date.now() - t0;
    console.log(`churn: ${CLIENTS} clients in ${elapsed} ms, ${JSON.stringify(kinds)}, ` +
                `at most ${maxRunning} running of ${h0.sessions} sessions`);
    assert.ok(kinds.complete > 10 && kinds.aborted > 10, JSON.stringify(kinds));
    assert.ok(h0.sessions === 1 || maxRunning > 1, "requests never ran together");

    // Nothing leaked: no session held, nothing queued, threads back to the baseline.
    await waitIdle(s.base);
    let h;
    for (let k = 0; k < 100; k++) {
      h = await health(s.base);
      if (h.free === h.sessions && threads(s.pid) === threads0) break;
      await sleep(100);
    }
    assert.equal(h.running, 0);
    assert.equal(h.queued, 0);
    assert.equal(h.free, h.sessions);
    assert.equal(threads(s.pid), threads0, "server threads back to the baseline");
    const grown = rss(s.pid) - rss0;
    console.log(`churn: threads ${threads0}, rss ${(rss0 / 2 ** 20).toFixed(1)} MiB, grew ` +
                `${(grown / 2 ** 20).toFixed(1)} MiB`);
    if (!SANITIZED) assert.ok(grown < RSS_GROWTH_LIMIT, `RSS grew by ${grown} bytes`);

    // And it still serves, exactly as before.
    const again = await c.chat.completions.create(body(0, { max_tokens: 12 }));
    assert.equal(again.choices[0].message.content, reference.choices[0].message.content);
  } finally {
    await s.stop();
  }
});
