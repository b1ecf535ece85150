// tests/server/soak_cases.mjs: the requests the soak (soak.mjs) sends, and the two ways it sends
// them. Written against HTTP/1.1 on the wire (node:http for well-formed requests, node:net for
// the rest), with no assumption about the HTTP library inside the server.
//
// Each case is { name, kind, weight, run(ctx) } and run resolves to { outcome, status, problem }:
//   outcome  2xx / 4xx / 5xx: a response with that status class (a stream that carried an error
//            event counts as 5xx); closed: the server closed or reset the connection before a
//            status line; aborted: the client left on purpose (the abandoned cases); timeout: no
//            answer within the case's limit; error: the client could not even connect.
//   problem  set when the server did what that case does not allow: a valid request not served
//            (or served a malformed body), an invalid one accepted or answered with a 5xx, a
//            broken request left unanswered, any 5xx.
// kind: valid (every endpoint, streaming and not, small outputs), invalid (bad JSON, wrong types,
// out-of-range values, unknown routes and models, oversized or truncated bodies, bad
// Content-Length, garbage on a raw socket) or abandoned (the client leaves mid-headers, mid-body,
// while queued, mid-stream, or before reading a non-streaming answer).
import http from "node:http";
import net from "node:net";

// A valid request's whole answer, queueing included (64 clients share a handful of sessions).
const VALID_LIMIT_MS = 120000;
// An invalid request's answer or close. The server must not hold a connection whose request can
// never complete forever (a slow client would pin it); the server's header deadline is 10 s
// (--header-timeout), its body deadline 60 s but these bodies stop well before it: a 408 or a
// close comes within this.
const INVALID_LIMIT_MS = 30000;
// The server's body limit in the soak (--max-body): oversized bodies are a little over it.
export const MAX_BODY = 1 << 20;
// The soak's context per session (--ctx): the context-length case sends a prompt over it.
export const CTX = 2048;

const WORDS = (
  "the a river mountain quiet engine token stream cache session model answer question small " +
  "large blue green seven eleven market harbor window garden letter winter summer reason " +
  "measure light shadow travel number silver paper castle forest signal bridge orbit"
).split(" ");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A small deterministic PRNG (mulberry32).
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const int = (rand, lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (rand, xs) => xs[Math.floor(rand() * xs.length)];
const chance = (rand, p) => rand() < p;
export function words(rand, lo, hi) {
  return Array.from({ length: int(rand, lo, hi) }, () => pick(rand, WORDS)).join(" ");
}
// Prompts of 3-40 words, now and then up to 300 (~400 tokens: eight of them fill a 2048-row
// step; the priming sends eight at once so the step buffers reach that size before the baseline).
export const PROMPT_WORDS_MAX = 300;
const prompt = (rand) => words(rand, 3, chance(rand, 0.03) ? PROMPT_WORDS_MAX : 40);

// 501 (a transfer coding the server does not implement) and 505 (an HTTP version it does not
// speak) are how RFC 9112 refuses such requests, not server failures: they count with the 4xx.
const PROTOCOL_REFUSALS = new Set([501, 505]);
const statusClass = (s) => (PROTOCOL_REFUSALS.has(s) ? "4xx" : `${Math.floor(s / 100)}xx`);

// One request through node:http. leaveAfterMs / leaveAfterEvents: the client destroys the
// request that long after sending it, or after that many SSE data lines (an abandoned case).
export function httpCall(port, spec) {
  const { method = "POST", path, body, agent = false, limitMs = VALID_LIMIT_MS } = spec;
  const headers = { ...(spec.headers ?? {}) };
  const raw = body === undefined || typeof body === "string" || Buffer.isBuffer(body);
  const payload = raw ? body : JSON.stringify(body);
  if (payload !== undefined) {
    headers["content-type"] ??= "application/json";
    headers["content-length"] = Buffer.byteLength(payload);
  }
  return new Promise((resolve) => {
    let settled = false;
    let status = null;
    let contentType = "";
    let text = "";
    let timer = null;
    let leaveTimer = null;
    const req = http.request({ host: "127.0.0.1", port, method, path, headers, agent });
    const finish = (r) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(leaveTimer);
      resolve({ status, contentType, text, reused: Boolean(req.reusedSocket), ...r });
    };
    const leave = () => {
      req.destroy();
      finish({ outcome: "aborted" });
    };
    req.on("response", (res) => {
      status = res.statusCode;
      contentType = res.headers["content-type"] ?? "";
      res.setEncoding("utf8");
      res.on("data", (d) => {
        text += d;
        if (spec.leaveAfterEvents && (text.match(/^data:/gm)?.length ?? 0) >= spec.leaveAfterEvents) leave();
      });
      res.on("error", () => {});
      res.on("close", () =>
        finish(res.complete ? { outcome: statusClass(status) } : { outcome: "closed", cut: true }));
    });
    req.on("error", (e) => {
      const refused = e.code === "ECONNREFUSED";
      finish({ outcome: refused ? "error" : "closed", error: `${e.code ?? ""} ${e.message}` });
    });
    timer = setTimeout(() => {
      req.destroy();
      finish({ outcome: "timeout" });
    }, limitMs);
    if (spec.leaveAfterMs !== undefined) leaveTimer = setTimeout(leave, spec.leaveAfterMs);
    req.end(payload);
  });
}

// Bytes over a raw socket. parts: buffers or strings, or numbers (a pause of that many ms between
// writes). halfClose: shut our side down after writing. leaveAfterMs: destroy the socket that
// long after the last write (abandoned); otherwise wait up to limitMs for one final response (1xx
// skipped; its body read by Content-Length, to the chunked terminator, or to the close).
export function rawCall(port, parts, { halfClose = false, leaveAfterMs, limitMs = INVALID_LIMIT_MS } = {}) {
  return new Promise((resolve) => {
    let settled = false;
    let buf = Buffer.alloc(0);
    const sock = net.connect(port, "127.0.0.1");
    // Until the writes are done, the limit covers the connection and the writes too.
    let timer = setTimeout(() => finish({ outcome: "timeout" }), limitMs);
    const finish = (r) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      const head = parseHead(buf);
      const body = head ? buf.subarray(head.end) : Buffer.alloc(0);
      resolve({ status: head?.status ?? null, body, text: body.toString(), ...r });
    };
    sock.on("error", (e) => {
      if (e.code === "ECONNREFUSED") finish({ outcome: "error", error: e.message });
    });
    sock.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      const head = parseHead(buf);
      if (head && responseComplete(head, buf)) finish({ outcome: statusClass(head.status) });
    });
    sock.on("close", () => {
      const head = parseHead(buf);
      finish(head ? { outcome: statusClass(head.status), cut: !responseComplete(head, buf) }
                  : { outcome: "closed" });
    });
    sock.on("connect", async () => {
      for (const p of parts) {
        if (settled) return;
        if (typeof p === "number") await sleep(p);
        else if (!sock.destroyed) sock.write(p);
      }
      if (halfClose && !sock.destroyed) sock.end();
      clearTimeout(timer);
      if (leaveAfterMs !== undefined) {
        timer = setTimeout(() => finish({ outcome: "aborted" }), leaveAfterMs);
      } else {
        timer = setTimeout(() => finish({ outcome: "timeout" }), limitMs);
      }
    });
  });
}

// The final response's status line and headers in buf (1xx responses skipped), or null.
function parseHead(buf) {
  let start = 0;
  for (;;) {
    const end = buf.indexOf("\r\n\r\n", start);
    if (end < 0) return null;
    const lines = buf.subarray(start, end).toString("latin1").split("\r\n");
    const m = /^HTTP\/\d\.\d (\d{3})/.exec(lines[0]);
    if (!m) return null;
    const status = Number(m[1]);
    if (status >= 100 && status < 200) {
      start = end + 4;
      continue;
    }
    const headers = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(":");
      if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    return { status, headers, end: end + 4 };
  }
}
// A chunked body (bytes) decoded to text, or null when it is malformed or has no last chunk.
function dechunk(buf) {
  const parts = [];
  for (let i = 0; ; ) {
    const eol = buf.indexOf("\r\n", i);
    if (eol < 0) return null;
    const n = parseInt(buf.subarray(i, eol).toString("latin1"), 16);
    if (!(n >= 0)) return null;
    if (n === 0) return Buffer.concat(parts).toString();
    parts.push(buf.subarray(eol + 2, eol + 2 + n));
    i = eol + 2 + n + 2;
  }
}
function responseComplete(head, buf) {
  const body = buf.subarray(head.end);
  if (head.headers["content-length"] !== undefined) {
    return body.length >= Number(head.headers["content-length"]);
  }
  if (/chunked/i.test(head.headers["transfer-encoding"] ?? "")) {
    return body.includes("\r\n0\r\n\r\n") || body.subarray(0, 5).toString() === "0\r\n\r\n";
  }
  return false; // read to the close
}

// ---------------------------------------------------------------------------------------------
// Valid requests.

const MODELS = ["deepseek-chat", "deepseek-v4-flash", "deepseek-reasoner"];

function chatBody(rand, stream) {
  const messages = [];
  if (chance(rand, 0.3)) {
    messages.push({ role: "system", content: "You are a soak test. " + words(rand, 2, 20) });
  }
  if (chance(rand, 0.2)) {
    messages.push({ role: "user", content: words(rand, 2, 12) });
    messages.push({ role: "assistant", content: words(rand, 2, 12) });
  }
  messages.push({ role: "user", content: prompt(rand) });
  const b = { model: pick(rand, MODELS), messages, max_tokens: int(rand, 1, 8), stream };
  if (stream && chance(rand, 0.5)) b.stream_options = { include_usage: true };
  if (chance(rand, 0.4)) b.seed = int(rand, 1, 1e6);
  if (chance(rand, 0.3)) b.temperature = Math.round(rand() * 200) / 100;
  if (chance(rand, 0.2)) b.stop = [pick(rand, WORDS), "\n\n"];
  if (chance(rand, 0.15)) {
    b.tools = [{ type: "function", function: { name: "get_weather", description: "Weather for a city",
      parameters: { type: "object", properties: { city: { type: "string" } } } } }];
    // A forced call needs ~30 tokens to close its block; otherwise it comes back as text.
    if (chance(rand, 0.5)) {
      b.tool_choice = "required";
      b.max_tokens = 48;
    }
  }
  return b;
}
const completionsBody = (rand, stream) => ({
  model: pick(rand, MODELS),
  prompt: chance(rand, 0.2) ? [prompt(rand)] : prompt(rand),
  max_tokens: int(rand, 1, 8),
  stream,
});
function messagesBody(rand, stream) {
  const b = { model: pick(rand, MODELS), max_tokens: int(rand, 1, 8), stream,
              messages: [{ role: "user", content: prompt(rand) }] };
  if (chance(rand, 0.3)) b.system = [{ type: "text", text: "Answer briefly. " + words(rand, 1, 10) }];
  if (chance(rand, 0.2)) b.thinking = { type: "enabled", budget_tokens: 4 };
  if (chance(rand, 0.2)) b.stop_sequences = [pick(rand, WORDS)];
  return b;
}
function responsesBody(rand, stream, previous) {
  const b = { model: pick(rand, MODELS), max_output_tokens: int(rand, 1, 8), stream,
              input: chance(rand, 0.5) ? prompt(rand)
                : [{ type: "message", role: "user", content: [{ type: "input_text", text: prompt(rand) }] }] };
  if (chance(rand, 0.3)) b.instructions = "Be brief. " + words(rand, 1, 8);
  if (previous && chance(rand, 0.4)) b.previous_response_id = previous;
  if (chance(rand, 0.2)) b.reasoning = { effort: "low", summary: "auto" };
  return b;
}

// What a finished stream must end with, per endpoint.
const STREAM_END = {
  "/v1/chat/completions": /data: \[DONE\]\s*$/,
  "/v1/completions": /data: \[DONE\]\s*$/,
  "/v1/messages": /event: message_stop/,
  "/v1/responses": /"type":"response\.(completed|incomplete)"/,
};
function streamProblem(path, text) {
  if (/"type":"response\.failed"|"type":"error"|^data: \{"error"/m.test(text)) {
    return "an error event in the stream";
  }
  if (!STREAM_END[path].test(text)) {
    return `the stream does not end as ${path} streams do: ...${text.slice(-120)}`;
  }
  return null;
}
function bodyProblem(path, text) {
  let j;
  try {
    j = JSON.parse(text);
  } catch {
    return `not JSON: ${text.slice(0, 120)}`;
  }
  const ok = {
    "/v1/chat/completions": () => j.object === "chat.completion" && j.choices?.[0]?.message,
    "/v1/completions": () => j.object === "text_completion" && typeof j.choices?.[0]?.text === "string",
    "/v1/messages": () => j.type === "message" && Array.isArray(j.content),
    "/v1/responses": () => j.object === "response" && ["completed", "incomplete"].includes(j.status),
    "/v1/messages/count_tokens": () => Number.isInteger(j.input_tokens) && j.input_tokens > 0,
    "/v1/models": () => j.object === "list" && j.data.length > 0,
    "/v1/models/deepseek-v4-flash": () => j.id === "deepseek-v4-flash",
    "/health": () => j.status === "ok",
  }[path];
  if (ok && !ok()) return `unexpected body: ${text.slice(0, 160)}`;
  return null;
}

// A request through the client's agent. One the keep-alive agent sent on a socket the server
// had just closed (its idle timeout) is resent once on a fresh connection, as HTTP clients do
// (ctx.retries counts them).
async function send(ctx, spec) {
  const r = await httpCall(ctx.port, { ...spec, agent: ctx.agent });
  if (!(r.outcome === "closed" && r.reused && r.status === null)) return r;
  ctx.retries.n++;
  return httpCall(ctx.port, { ...spec, agent: false });
}

// A valid request: must be answered `want` with a well-formed body.
async function valid(ctx, spec, { want = 200, accept } = {}) {
  const r = await send(ctx, spec);
  if (r.status === want) {
    const stream = /text\/event-stream/.test(r.contentType);
    const p = r.outcome !== statusClass(want) ? `cut after the status line (${r.outcome})`
      : stream ? streamProblem(spec.path, r.text) : want === 200 ? bodyProblem(spec.path, r.text) : null;
    if (p) return { ...r, outcome: /error event/.test(p) ? "5xx" : r.outcome, problem: p };
    return r;
  }
  if (accept && accept(r)) return r;
  return { ...r, problem: `${r.status ?? r.outcome}: ${(r.text || r.error || "").slice(0, 160)}` };
}

const gen = (path, make) => async (ctx) => {
  const stream = chance(ctx.rand, 0.5);
  return valid(ctx, { path, body: make(ctx.rand, stream) });
};

async function responses(ctx) {
  const stream = chance(ctx.rand, 0.5);
  const body = responsesBody(ctx.rand, stream, ctx.state.lastResponse);
  // The server keeps the last 64 responses: an older id is a documented 400 naming the field.
  const evicted = (r) => r.status === 400 && body.previous_response_id && /previous_response_id/.test(r.text);
  const r = await valid(ctx, { path: "/v1/responses", body }, { accept: evicted });
  const id = /"id":"(resp_[0-9a-f]+)"/.exec(r.text);
  if (id) ctx.state.lastResponse = id[1];
  return r;
}

// Well-formed HTTP that node:http does not send: an HTTP/1.0 stream (no chunked encoding, the
// end is the close), a chunked request body, Expect: 100-continue.
async function rawValid(ctx) {
  const rand = ctx.rand;
  const body = JSON.stringify({ model: "deepseek-chat", max_tokens: int(rand, 1, 6),
                                messages: [{ role: "user", content: prompt(rand) }], stream: true });
  const n = Buffer.byteLength(body);
  const cut = Math.floor(body.length / 2);
  const chunk = (s) => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;
  const v = variant(rand, {
    "http-1.0-stream": () => ["POST /v1/chat/completions HTTP/1.0\r\nContent-Type: application/json\r\n" +
      `Content-Length: ${n}\r\n\r\n${body}`],
    "chunked-body": () => ["POST /v1/chat/completions HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n" +
      "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n", chunk(body.slice(0, cut)), 20,
      chunk(body.slice(cut)) + "0\r\n\r\n"],
    "expect-continue": () => ["POST /v1/chat/completions HTTP/1.1\r\nHost: soak\r\n" +
      `Content-Type: application/json\r\nContent-Length: ${n}\r\nExpect: 100-continue\r\n` +
      "Connection: close\r\n\r\n", 10, body],
  });
  const r = { ...(await rawCall(ctx.port, v.parts, { limitMs: VALID_LIMIT_MS })), variant: v.name };
  if (r.status !== 200) return { ...r, problem: `${r.status ?? r.outcome} ${r.text.slice(0, 120)}` };
  // HTTP/1.0: the body is everything up to the close; HTTP/1.1: chunks up to the last one.
  const text = v.name === "http-1.0-stream" ? r.text : dechunk(r.body);
  if (text === null || (v.name !== "http-1.0-stream" && r.cut)) {
    return { ...r, problem: "a cut or malformed chunked body" };
  }
  const p = streamProblem("/v1/chat/completions", text);
  return p ? { ...r, outcome: /error event/.test(p) ? "5xx" : r.outcome, problem: p } : r;
}

// ---------------------------------------------------------------------------------------------
// Invalid requests: well-formed HTTP with a bad body or route must get exactly a 4xx; broken HTTP
// may get a 4xx or a close, within INVALID_LIMIT_MS, never a 2xx or 5xx.

function invalid(ctx, spec) {
  return send(ctx, { ...spec, limitMs: INVALID_LIMIT_MS }).then((r) => {
    if (r.outcome === "4xx") return r;
    // A body over the limit may be refused while it is still being sent: the close is an answer.
    if (spec.mayClose && r.outcome === "closed") return r;
    return { ...r, problem: `${r.status ?? r.outcome}: ${(r.text || r.error || "").slice(0, 160)}` };
  });
}
function brokenHttp(ctx, parts, opts) {
  return rawCall(ctx.port, parts, opts).then((r) => {
    if (r.outcome === "4xx" || r.outcome === "closed") return r;
    if (r.outcome === "timeout") return { ...r, problem: `no answer and no close within ${INVALID_LIMIT_MS} ms` };
    return { ...r, problem: `${r.status ?? r.outcome}: ${r.text.slice(0, 160)}` };
  });
}
const chatWith = (rand, extra) => ({ model: "deepseek-chat", max_tokens: 4,
                                      messages: [{ role: "user", content: words(rand, 2, 10) }], ...extra });

const BAD_FIELDS = [
  { messages: "hi" }, { max_tokens: "8" }, { stream: "yes" }, { temperature: "hot" }, { stop: 5 },
  { messages: [{ role: "user", content: 5 }] }, { messages: [{ role: "wizard", content: "x" }] },
  { messages: [] }, { messages: null }, { tools: "get_weather" }, { reasoning_effort: "extreme" },
  { tool_choice: "required" }, { model: 7 },
];
const OUT_OF_RANGE = [
  { temperature: 3 }, { temperature: -1 }, { top_p: 1.5 }, { min_p: -0.1 }, { top_k: -2 },
  { max_tokens: -1 }, { max_completion_tokens: -5 },
];

async function badJson(ctx) {
  const rand = ctx.rand;
  const good = JSON.stringify(chatWith(rand));
  const bodies = [
    good.slice(0, int(rand, 1, good.length - 1)), // truncated JSON, honest Content-Length
    "[1,2,3]", "null", '"just a string"', "{}", "not json at all",
    good.replace("{", "{,"), good + "}",
    // Bytes that are not UTF-8 inside the content string.
    Buffer.concat([Buffer.from(good.slice(0, -4)), Buffer.from([0xff, 0xfe, 0x22, 0x7d, 0x5d, 0x7d])]),
    '{"model":"deepseek-chat","max_tokens":2,"messages":[{"role":"user","content":"\\ud800"}]}',
    '{"model":"deepseek-chat","messages":' + "[".repeat(5000) + "]".repeat(5000) + "}",
  ];
  const path = pick(rand, ["/v1/chat/completions", "/v1/completions", "/v1/messages", "/v1/responses",
                           "/v1/messages/count_tokens"]);
  return invalid(ctx, { path, body: pick(rand, bodies) });
}
const badFields = (ctx) =>
  invalid(ctx, { path: "/v1/chat/completions", body: chatWith(ctx.rand, pick(ctx.rand, BAD_FIELDS)) });
const outOfRange = (ctx) =>
  invalid(ctx, { path: "/v1/chat/completions", body: chatWith(ctx.rand, pick(ctx.rand, OUT_OF_RANGE)) });
function badOtherEndpoints(ctx) {
  const rand = ctx.rand;
  const specs = [
    { path: "/v1/messages",
      body: { model: "deepseek-chat", max_tokens: -3, messages: [{ role: "user", content: "x" }] } },
    { path: "/v1/messages", body: { model: "deepseek-chat", max_tokens: 4, messages: "x" } },
    { path: "/v1/messages/count_tokens", body: { model: "deepseek-chat", messages: "x" } },
    { path: "/v1/responses", body: { model: "deepseek-chat", input: 5 } },
    { path: "/v1/responses", body: { model: "deepseek-chat", input: "hi", max_output_tokens: -1 } },
    { path: "/v1/responses", body: { model: "deepseek-chat", input: "hi", previous_response_id: "resp_00" } },
    { path: "/v1/completions", body: { model: "deepseek-chat" } },
    { path: "/v1/completions", body: { model: "deepseek-chat", prompt: [5] } },
    { path: "/v1/chat/completions", body: chatWith(rand, { model: "gpt-99" }) },
  ];
  return invalid(ctx, pick(rand, specs));
}
function unknownRoute(ctx) {
  const specs = [
    { method: "POST", path: "/v1/chat/complete", body: {} }, { method: "GET", path: "/v1/nothing" },
    { method: "GET", path: "/v1/models/nope" }, { method: "GET", path: "/v1/chat/completions" },
    { method: "DELETE", path: "/health" }, { method: "PUT", path: "/v1/models", body: "x" },
    { method: "GET", path: "/v2/../../etc/passwd" }, { method: "GET", path: "/%00%ff" },
  ];
  return invalid(ctx, pick(ctx.rand, specs));
}
// A prompt over the context: tokenized, then refused (400 context_length_exceeded).
const overContext = (ctx) => invalid(ctx, { path: pick(ctx.rand, ["/v1/chat/completions", "/v1/messages"]),
  body: chatWith(ctx.rand, { messages: [{ role: "user", content: words(ctx.rand, CTX + 200, CTX + 800) }] }) });
// A body over --max-body, sent whole through node:http (413, or a close while it is sent).
const oversized = (ctx) => {
  const content = "x".repeat(MAX_BODY + int(ctx.rand, 1, MAX_BODY / 2));
  return invalid(ctx, { path: "/v1/chat/completions", mayClose: true,
                        body: chatWith(ctx.rand, { messages: [{ role: "user", content }] }) });
};

const head = (extra) =>
  `POST /v1/chat/completions HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n${extra}\r\n`;
// Named variants: a problem is counted under CASE/VARIANT, which --known-issue can name.
function variant(rand, table) {
  const [name, make] = pick(rand, Object.entries(table));
  return { name, parts: make() };
}
function garbage(ctx) {
  const rand = ctx.rand;
  const noise = () => Buffer.from(Array.from({ length: int(rand, 1, 400) }, () => int(rand, 0, 255)));
  const v = variant(rand, {
    "word": () => ["GARBAGE\r\n\r\n"],
    "method-only": () => ["GET\r\n\r\n"],
    "blank-lines": () => ["\r\n\r\n\r\n\r\n"],
    "http-9.9": () => ["GET /health HTTP/9.9\r\nHost: soak\r\n\r\n"],
    "lowercase": () => ["get /health http/1.1\r\n\r\n"],
    "binary": () => [Buffer.concat([noise(), Buffer.from("\r\n\r\n")])],
    "tls-hello": () =>
      [Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03]), noise(), "\r\n\r\n"],
    "http2-preface": () => ["PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"],
    "long-uri": () => [`GET /${"a".repeat(int(rand, 20000, 120000))} HTTP/1.1\r\nHost: soak\r\n\r\n`],
    "long-header": () =>
      [`GET /health HTTP/1.1\r\nHost: soak\r\nX-Big: ${"b".repeat(int(rand, 20000, 120000))}\r\n\r\n`],
    "bad-chunk-size": () => [head("Transfer-Encoding: chunked\r\n") + "zz\r\nabc\r\n0\r\n\r\n"],
    "unknown-transfer-coding": () => [head("Transfer-Encoding: gzip\r\n") + JSON.stringify(chatWith(rand))],
    // RFC 9112: a field line needs a colon (§5), a space before the colon MUST get a 400 (§5.1),
    // and so MUST an HTTP/1.1 request without Host (§3.2).
    "header-without-colon": () => ["GET /health HTTP/1.1\r\nHost: soak\r\nNo colon here\r\n\r\n"],
    "space-before-colon": () => ["GET /health HTTP/1.1\r\nHost : soak\r\n\r\n"],
    "no-host": () => ["GET /health HTTP/1.1\r\n\r\n"],
  });
  return brokenHttp(ctx, v.parts).then((r) => ({ ...r, variant: v.name }));
}
// RFC 9112 §6.3: a request whose Content-Length is not one decimal number (or whose copies
// differ) has no valid framing, and the server MUST answer 400 and close: a proxy in front that
// read the other length would see a different request (request smuggling).
function badContentLength(ctx) {
  const rand = ctx.rand;
  const body = JSON.stringify(chatWith(rand));
  const n = Buffer.byteLength(body);
  const v = variant(rand, {
    "letters": () => [head("Content-Length: abc\r\n") + body],
    "negative": () => [head("Content-Length: -5\r\n") + body],
    "exponent": () => [head("Content-Length: 1e3\r\n") + body],
    "overflow": () => [head("Content-Length: 99999999999999999999\r\n") + body],
    "over-limit": () => [head(`Content-Length: ${10 * MAX_BODY}\r\n`) + body],
    "short": () => [head(`Content-Length: ${n - 5}\r\n`) + body + "\r\n\r\n"], // the rest reads as a request
    "with-chunked": () => [head(`Content-Length: ${n}\r\nTransfer-Encoding: chunked\r\n`) + body],
    "duplicate-differing": () => [head(`Content-Length: ${n}\r\nContent-Length: ${n + 7}\r\n`) + body],
    "list": () => [head(`Content-Length: ${n}, ${n + 7}\r\n`) + body],
    "plus-sign": () => [head(`Content-Length: +${n}\r\n`) + body],
    "trailing-junk": () => [head(`Content-Length: ${n} 7\r\n`) + body],
  });
  return brokenHttp(ctx, v.parts).then((r) => ({ ...r, variant: v.name }));
}
// A body shorter than its Content-Length: with our side shut (EOF) it can be refused at once;
// left open, the server must give up on it (its read timeout) and answer or close.
function truncatedBody(ctx) {
  const body = JSON.stringify(chatWith(ctx.rand));
  const n = int(ctx.rand, 0, body.length - 1);
  const halfClose = chance(ctx.rand, 0.5);
  return brokenHttp(ctx, [head(`Content-Length: ${Buffer.byteLength(body)}\r\n`) + body.slice(0, n)], { halfClose })
    .then((r) => ({ ...r, variant: halfClose ? "half-closed" : "left-open" }));
}
// Headers with no blank line after them, left open: the server must give up on them too.
const stalledHeaders = (ctx) => brokenHttp(ctx, ["POST /v1/chat/completions HTTP/1.1\r\nHost: soak\r\nContent-Le"]);

// ---------------------------------------------------------------------------------------------
// Abandoned requests: the client leaves. What the server answered before it left must fit the
// request (no 5xx; no 4xx either where the request itself was valid); the server's health after
// them is what the soak checks.

function abandoned(r, validRequest = true) {
  if (r.outcome === "5xx" || (validRequest && r.outcome === "4xx")) {
    return { ...r, problem: `${r.status}: ${r.text.slice(0, 160)}` };
  }
  return r;
}
const GEN_PATHS = [
  ["/v1/chat/completions", chatBody], ["/v1/completions", completionsBody],
  ["/v1/messages", messagesBody], ["/v1/responses", (rand, stream) => responsesBody(rand, stream, null)],
];
function longBody(rand, stream) {
  const [path, make] = pick(rand, GEN_PATHS);
  const body = make(rand, stream);
  if ("max_output_tokens" in body) body.max_output_tokens = 200;
  else body.max_tokens = 200;
  delete body.tool_choice;
  return { path, body };
}
// Streaming; leaves after 1-4 data lines.
const midStream = (ctx) =>
  httpCall(ctx.port, { ...longBody(ctx.rand, true), leaveAfterEvents: int(ctx.rand, 1, 4) }).then(abandoned);
// Streaming or not; leaves 0-300 ms after sending (queued, prefilling, or early in decode).
const early = (ctx) =>
  httpCall(ctx.port, { ...longBody(ctx.rand, chance(ctx.rand, 0.5)), leaveAfterMs: int(ctx.rand, 0, 300) })
    .then(abandoned);
// Non-streaming, sent whole; the client goes away 0-800 ms later without reading, sometimes
// shutting its side first (a half-close, which the server takes for gone: docs/server.md).
function beforeReading(ctx) {
  const { path, body } = longBody(ctx.rand, false);
  const s = JSON.stringify(body);
  const req = `POST ${path} HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n` +
              `Content-Length: ${Buffer.byteLength(s)}\r\n\r\n${s}`;
  return rawCall(ctx.port, [req], { halfClose: chance(ctx.rand, 0.3), leaveAfterMs: int(ctx.rand, 0, 800) })
    .then(abandoned);
}
function midBody(ctx) {
  const s = JSON.stringify(longBody(ctx.rand, chance(ctx.rand, 0.5)).body);
  const n = int(ctx.rand, 0, s.length - 1);
  return rawCall(ctx.port, [head(`Content-Length: ${Buffer.byteLength(s)}\r\n`), int(ctx.rand, 0, 50), s.slice(0, n)],
                 { leaveAfterMs: int(ctx.rand, 0, 400) }).then((r) => abandoned(r, false));
}
function midHeaders(ctx) {
  const full = head("Content-Length: 20\r\n");
  return rawCall(ctx.port, [full.slice(0, int(ctx.rand, 1, full.length - 3))],
                 { leaveAfterMs: chance(ctx.rand, 0.2) ? int(ctx.rand, 1000, 3000) : int(ctx.rand, 0, 200) })
    .then((r) => abandoned(r, false));
}
const connectOnly = (ctx) => rawCall(ctx.port, [], { leaveAfterMs: int(ctx.rand, 0, 100) }).then(abandoned);

// ---------------------------------------------------------------------------------------------
// Weights: about 60% valid, 25% invalid, 15% abandoned.
export const CASES = [
  { name: "chat", kind: "valid", weight: 12, run: gen("/v1/chat/completions", chatBody) },
  { name: "completions", kind: "valid", weight: 7, run: gen("/v1/completions", completionsBody) },
  { name: "messages", kind: "valid", weight: 9, run: gen("/v1/messages", messagesBody) },
  { name: "responses", kind: "valid", weight: 9, run: responses },
  { name: "count_tokens", kind: "valid", weight: 5,
    run: (ctx) => valid(ctx, { path: "/v1/messages/count_tokens", body: messagesBody(ctx.rand, false) }) },
  { name: "models", kind: "valid", weight: 4,
    run: (ctx) =>
      valid(ctx, { method: "GET", path: pick(ctx.rand, ["/v1/models", "/v1/models/deepseek-v4-flash"]) }) },
  { name: "health", kind: "valid", weight: 4, run: (ctx) => valid(ctx, { method: "GET", path: "/health" }) },
  { name: "options", kind: "valid", weight: 2,
    run: (ctx) => valid(ctx, { method: "OPTIONS", path: "/v1/chat/completions" }, { want: 204 }) },
  { name: "raw-http", kind: "valid", weight: 4, run: rawValid },

  { name: "bad-json", kind: "invalid", weight: 4, run: badJson },
  { name: "bad-fields", kind: "invalid", weight: 3, run: badFields },
  { name: "out-of-range", kind: "invalid", weight: 2, run: outOfRange },
  { name: "bad-request-other", kind: "invalid", weight: 2, run: badOtherEndpoints },
  { name: "unknown-route", kind: "invalid", weight: 2, run: unknownRoute },
  { name: "over-context", kind: "invalid", weight: 1, run: overContext },
  { name: "oversized-body", kind: "invalid", weight: 1, run: oversized },
  { name: "garbage", kind: "invalid", weight: 4, run: garbage },
  { name: "bad-content-length", kind: "invalid", weight: 3, run: badContentLength },
  { name: "truncated-body", kind: "invalid", weight: 2, run: truncatedBody },
  { name: "stalled-headers", kind: "invalid", weight: 1, run: stalledHeaders },

  { name: "leave-mid-stream", kind: "abandoned", weight: 4, run: midStream },
  { name: "leave-early", kind: "abandoned", weight: 3, run: early },
  { name: "leave-before-reading", kind: "abandoned", weight: 3, run: beforeReading },
  { name: "leave-mid-body", kind: "abandoned", weight: 2, run: midBody },
  { name: "leave-mid-headers", kind: "abandoned", weight: 2, run: midHeaders },
  { name: "connect-only", kind: "abandoned", weight: 1, run: connectOnly },
];

// The requests that prime the server before its idle baseline: each endpoint once, then `n` of
// the largest prompts at once (the engine keeps its step buffers at the largest step seen).
export async function prime(port, n) {
  const rand = rng(7);
  for (const [path, make] of GEN_PATHS) {
    for (const stream of [false, true]) {
      const r = await httpCall(port, { path, body: make(rand, stream) });
      if (r.status !== 200) throw new Error(`priming ${path}: ${r.status ?? r.outcome} ${r.text ?? ""}`);
    }
  }
  const big = () => ({ model: "deepseek-chat", max_tokens: 4,
                       messages: [{ role: "user", content: words(rand, PROMPT_WORDS_MAX, PROMPT_WORDS_MAX) }] });
  const all = await Promise.all(
    Array.from({ length: n }, () => httpCall(port, { path: "/v1/chat/completions", body: big() })));
  const bad = all.find((r) => r.status !== 200);
  if (bad) throw new Error(`priming: ${bad.status ?? bad.outcome} ${bad.text}`);
}
