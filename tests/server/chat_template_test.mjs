// tests/server/chat_template_test.mjs: ds4-server --chat-template (docs/chat.md, "Server
// templates") through the real binary on loopback, on the tiny model (the real DeepSeek vocab).
// With `ds4` every rendering endpoint (chat completions, Anthropic messages and count_tokens,
// Responses) renders ds4-server's bytes: the traced prompts equal the ds4 engine's own traces
// committed in tests/data/ds4_render/ (a tools request, a tool-call history, a developer message,
// ...) and the prompt token counts are ds4's. By default the server renders the official format
// (tests/data/official_render/, pinned to the parser and chat::render() by api_test). A bad value
// is a usage error naming the accepted ones, the startup line names the template, and a disk KV cache
// directory shared by servers of both templates serves a file only to a prompt that starts with
// its text: the tools prompt written under `ds4` is not loaded under `official`, the tool-less one
// (the same bytes in both) is.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { test, tempDir, removeDir, startServer, SERVER, MODEL } from "./harness.mjs";

const DATA = join(dirname(fileURLToPath(import.meta.url)), "..", "data");
const NAMES = ["r1", "r2", "r3", "r4", "r5", "r6"];
// ds4-server's prompt token counts for rN (bench/compat.md, "Rendering and tokenization").
const DS4_TOKENS = { r1: 30, r2: 359, r3: 406, r4: 20, r5: 14, r6: 22 };
const request = (n) => readFileSync(join(DATA, "ds4_render", `${n}.request.json`), "utf8");
const ds4Text = (n) => readFileSync(join(DATA, "ds4_render", `${n}.txt`), "utf8");
const officialText = (n) => readFileSync(join(DATA, "official_render", `${n}.txt`), "utf8");

// r2 as an Anthropic Messages request (the same tool, its schema as input_schema) and r2 / r5 as
// Responses requests: the same conversations (the official template renders them as r2 / r5).
const r2 = JSON.parse(request("r2"));
const weather = r2.tools[0].function;
const MESSAGES_R2 = {
  model: "deepseek-v4-flash",
  max_tokens: 1,
  tools: [{ name: weather.name, description: weather.description, input_schema: weather.parameters }],
  messages: [{ role: "user", content: "Weather in Rome?" }],
};
const RESPONSES_R2 = {
  model: "deepseek-v4-flash",
  max_output_tokens: 1,
  tools: [{ type: "function", ...weather }],
  input: "Weather in Rome?",
};
const RESPONSES_R5 = {
  model: "deepseek-v4-flash",
  max_output_tokens: 1,
  reasoning: { effort: "max" },
  input: [
    { role: "developer", content: "Answer in French." },
    { role: "user", content: [{ type: "input_text", text: "Say hello." }, { type: "input_text", text: "Then stop." }] },
  ],
};

async function post(s, path, body) {
  const res = await fetch(`${s.base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const json = await res.json();
  assert.equal(res.status, 200, `${path}: ${JSON.stringify(json)}`);
  return json;
}

const traceLines = (file) =>
  readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));

// Sends the requests one at a time; returns each one's trace line and usage prompt count.
async function renderAll(s, trace, requests) {
  const out = [];
  for (const [path, body] of requests) {
    const before = traceLines(trace).length;
    const j = await post(s, path, body);
    // Anthropic's input_tokens leave out the cached ones.
    const prompt = j.usage.prompt_tokens ?? j.usage.input_tokens + (j.usage.cache_read_input_tokens ?? 0);
    const line = traceLines(trace)[before];
    assert.ok(line, `no trace line for ${path}`);
    assert.equal(line.prompt_tokens, prompt, `${path}: trace and usage agree`);
    out.push({ rendered: line.rendered, prompt });
  }
  return out;
}

async function withServer(args, fn) {
  const dir = tempDir("ds4-tpl-");
  const trace = join(dir, "trace.jsonl");
  try {
    const s = await startServer(["--ctx", "4096", "--trace", trace, ...args]);
    try {
      // The trace holds whole prompts: the server's user alone may read it.
      assert.equal(statSync(trace).mode & 0o777, 0o600, "trace file mode");
      await fn(s, trace);
    } finally {
      await s.stop();
    }
  } finally {
    removeDir(dir);
  }
}

test("--chat-template ds4 renders ds4-server's bytes on every endpoint", async () => {
  await withServer(["--chat-template", "ds4"], async (s, trace) => {
    assert.match(s.stdout(), /listening on .*chat template ds4\)/);
    const chat = await renderAll(s, trace, NAMES.map((n) => ["/v1/chat/completions", request(n)]));
    NAMES.forEach((n, i) => {
      assert.equal(chat[i].rendered, ds4Text(n), `${n}: ds4's traced prompt`);
      assert.equal(chat[i].prompt, DS4_TOKENS[n], `${n}: ds4's prompt tokens`);
    });
    const [messages, responses, responses5] = await renderAll(s, trace, [
      ["/v1/messages", MESSAGES_R2],
      ["/v1/responses", RESPONSES_R2],
      ["/v1/responses", RESPONSES_R5],
    ]);
    // ds4-server unwraps only OpenAI's "function" member and renders other schemas as sent
    // (features.md §2.1): the Anthropic tool with its input_schema, the Responses one with its type.
    const ds4Messages = ds4Text("r2").replace('"parameters":', '"input_schema":');
    const ds4Responses = ds4Text("r2").replace('{"name":"get_weather"', '{"type":"function","name":"get_weather"');
    assert.notEqual(ds4Messages, ds4Text("r2"));
    assert.notEqual(ds4Responses, ds4Text("r2"));
    assert.equal(messages.rendered, ds4Messages, "messages with a tool");
    assert.equal(responses.rendered, ds4Responses, "responses with a tool");
    assert.equal(responses5.rendered, ds4Text("r5"), "responses with a developer message");
    assert.equal(responses5.prompt, DS4_TOKENS.r5);
    const count = await post(s, "/v1/messages/count_tokens", MESSAGES_R2);
    assert.equal(count.input_tokens, messages.prompt);
  });
});

test("the default renders the official format on every endpoint", async () => {
  await withServer([], async (s, trace) => {
    assert.match(s.stdout(), /listening on .*chat template official\)/);
    const chat = await renderAll(s, trace, NAMES.map((n) => ["/v1/chat/completions", request(n)]));
    NAMES.forEach((n, i) => assert.equal(chat[i].rendered, officialText(n), `${n}: official`));
    // Where docs/chat.md says the templates differ: the tools block (r2, r3), a developer message
    // before the last user turn in thinking mode (r5); elsewhere the bytes are the same.
    for (const n of ["r2", "r3", "r5"]) assert.notEqual(officialText(n), ds4Text(n), n);
    for (const n of ["r1", "r4", "r6"]) assert.equal(officialText(n), ds4Text(n), n);
    const [messages, responses, responses5] = await renderAll(s, trace, [
      ["/v1/messages", MESSAGES_R2],
      ["/v1/responses", RESPONSES_R2],
      ["/v1/responses", RESPONSES_R5],
    ]);
    assert.equal(messages.rendered, officialText("r2"));
    assert.equal(responses.rendered, officialText("r2"));
    assert.equal(responses5.rendered, officialText("r5"));
    const count = await post(s, "/v1/messages/count_tokens", MESSAGES_R2);
    assert.equal(count.input_tokens, chat[1].prompt);
  });
  await withServer(["--chat-template", "official"], async (s, trace) => {
    const [r2official] = await renderAll(s, trace, [["/v1/chat/completions", request("r2")]]);
    assert.equal(r2official.rendered, officialText("r2"), "--chat-template official: the default");
  });
});

test("a bad --chat-template is a usage error naming the accepted values", () => {
  for (const bad of ["ds5", "OFFICIAL", ""]) {
    const r = spawnSync(SERVER, ["-m", MODEL, "--port", "0", "--chat-template", bad], { encoding: "utf8" });
    assert.equal(r.status, 2, `${bad}: ${r.stderr}`);
    const lines = r.stderr.trim().split("\n");
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], /--chat-template/);
    assert.ok(lines[0].includes(`unknown chat template '${bad}': use one of official, ds4`), lines[0]);
  }
  const help = spawnSync(SERVER, ["--help"], { encoding: "utf8" });
  assert.match(help.stdout, /--chat-template TEXT:\{official,ds4\}=official/);
});

// One live session, small cache thresholds (disk_cache_test.mjs's settings): each conversation
// switch saves the live session and looks the next prompt up on disk.
function kvFlags(dir, template) {
  return [
    "--ctx", "2048", "--prefill-chunk", "64", "--parallel", "1", "--kv-disk-dir", dir,
    "--kv-cache-min-tokens", "32", "--kv-cache-boundary-align-tokens", "16",
    "--kv-cache-boundary-trim-tokens", "4", "--chat-template", template,
  ];
}

test("a disk KV cache shared across templates serves a file only where the bytes agree", async (t) => {
  const dir = tempDir("ds4-tpl-kvc-", t);
  const system = "You answer questions about the weather in Rome, briefly and politely. ".repeat(6);
  const withTools = {
    model: "deepseek-chat", max_tokens: 2, seed: 1, tools: r2.tools,
    messages: [{ role: "system", content: system }, { role: "user", content: "Weather in Rome?" }],
  };
  const plain = {
    model: "deepseek-chat", max_tokens: 2, seed: 1,
    // Another system text from its first byte: no file of one conversation starts the other.
    messages: [{ role: "system", content: "Milan only. " + system }, { role: "user", content: "And in Milan?" }],
  };
  const cached = (j) => j.usage.prompt_tokens_details.cached_tokens;
  const kvFiles = () => readdirSync(dir).filter((n) => /^[0-9a-f]{40}\.kv$/.test(n)).length;
  const waitFiles = async (n) => {
    for (let i = 0; kvFiles() < n; i++) {
      assert.ok(i < 3000, `only ${kvFiles()} cache files`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  // Written under ds4: a cold file per prompt (the tools one starts with ds4's tools block).
  const s1 = await startServer(kvFlags(dir, "ds4"));
  let toolsPrompt, plainPrompt;
  try {
    toolsPrompt = (await post(s1, "/v1/chat/completions", withTools)).usage.prompt_tokens;
    plainPrompt = (await post(s1, "/v1/chat/completions", plain)).usage.prompt_tokens;
    await waitFiles(2);
  } finally {
    await s1.stop();
  }
  // Another ds4 server loads both; the live session then continues the conversation.
  const s2 = await startServer(kvFlags(dir, "ds4"));
  try {
    const again = await post(s2, "/v1/chat/completions", withTools);
    assert.ok(cached(again) > 0, "the ds4 tools prompt is served from the ds4 file");
    assert.equal(again.usage.prompt_tokens, toolsPrompt);
    const next = await post(s2, "/v1/chat/completions", {
      ...withTools,
      messages: [...withTools.messages, { role: "assistant", content: again.choices[0].message.content ?? "" },
        { role: "user", content: "And tomorrow?" }],
    });
    assert.ok(cached(next) >= again.usage.prompt_tokens, "the live session is reused");
  } finally {
    await s2.stop();
  }
  // An official server: the tools prompt renders other bytes from BOS on (no file starts it, so
  // nothing is loaded); the tool-less prompt is the same text, so ds4's file serves it.
  const s3 = await startServer(kvFlags(dir, "official"));
  try {
    const hits0 = (s3.stderr().match(/kv cache hit/g) ?? []).length;
    const tools = await post(s3, "/v1/chat/completions", withTools);
    assert.equal(cached(tools), 0, "no ds4-rendered file is a prefix of the official tools prompt");
    assert.notEqual(tools.usage.prompt_tokens, toolsPrompt);
    assert.equal((s3.stderr().match(/kv cache hit/g) ?? []).length, hits0);
    const same = await post(s3, "/v1/chat/completions", plain);
    assert.ok(cached(same) > 0, "the tool-less prompt (identical bytes) is served from ds4's file");
    assert.equal(same.usage.prompt_tokens, plainPrompt);
  } finally {
    await s3.stop();
  }
});
