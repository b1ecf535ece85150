// tests/clients/claude_code_test.mjs: the real Claude Code CLI (npm @anthropic-ai/claude-code,
// pinned in tests/clients) in print mode against ds4-server on loopback with the tiny model,
// configured as the product's wrapper does (ANTHROPIC_BASE_URL / ANTHROPIC_AUTH_TOKEN /
// ANTHROPIC_MODEL, no ANTHROPIC_API_KEY, no nonessential traffic). The random tiny model cannot
// answer on its own, so the hidden --test-forced-output hook supplies the first output tokens of
// each request with tools (the model still evaluates each one): a plain turn, and a turn where
// the model calls Read, Claude Code runs it and sends the file back, and that request reuses the
// session (cached tokens = everything the first request evaluated). Claude Code's own system
// prompt (~12k tokens) is replaced by --system-prompt to keep the CPU prefill short.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer, tempDir } from "../server/harness.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const CLAUDE = join(here, "node_modules", ".bin", "claude");
// scripts/setup.sh installs it; without it the tests are skipped and say why.
const skip = existsSync(CLAUDE) ? false : `${CLAUDE} is missing: run scripts/setup.sh`;
const EOS = "<｜end▁of▁sentence｜>";
const MODEL = "deepseek-chat";

// A guard against a hang, not a speed limit (tests assert behaviour, never speed): on the 2-core
// machine under load (other builds beside ctest) a Claude Code run, which takes ~5-10 s when the
// machine is idle, was killed at the old 120 s limit while it was still making progress.
const HANG_GUARD_MS = 250000;

function run(cmd, args, { env, cwd }) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    const timer = setTimeout(() => {
      err += `\n[killed: still running after ${HANG_GUARD_MS / 1000} s]`;
      p.kill("SIGKILL");
    }, HANG_GUARD_MS);
    p.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

// t: the calling test, whose end removes the run's HOME (and the temporary files inside it).
async function claude(t, base, prompt, cwd) {
  const home = tempDir("ds4-claude-home-", t);
  writeFileSync(join(home, ".claude.json"), JSON.stringify({ hasCompletedOnboarding: true }));
  const tmp = join(home, "tmp");
  mkdirSync(tmp);
  const env = { PATH: process.env.PATH, HOME: home, TMPDIR: tmp, CLAUDE_CODE_TMPDIR: tmp };
  Object.assign(env, {
    ANTHROPIC_BASE_URL: base,
    ANTHROPIC_AUTH_TOKEN: "dsv4-local",
    ANTHROPIC_MODEL: MODEL,
    ANTHROPIC_DEFAULT_OPUS_MODEL: MODEL,
    ANTHROPIC_DEFAULT_SONNET_MODEL: MODEL,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: MODEL,
    CLAUDE_CODE_SUBAGENT_MODEL: MODEL,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    CLAUDE_CODE_MAX_OUTPUT_TOKENS: "64",
  });
  const args = ["-p", prompt, "--output-format", "stream-json", "--verbose", "--tools", "Read",
    "--allowedTools", "Read", "--system-prompt", "You are a test agent.", "--max-turns", "3"];
  const r = await run(CLAUDE, args, { env, cwd });
  const events = r.out.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
  return { ...r, events, result: events.find((e) => e.type === "result") };
}

const traceLines = (path) =>
  readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l));

test("a plain turn completes", { skip }, async (t) => {
  const s = await startServer(["--ctx", "8192", "--test-forced-output", `</think>Hello from ds4.${EOS}`]);
  try {
    const r = await claude(t, s.base, "Say hello", tempDir("ds4-claude-", t));
    assert.ok(r.result, `no result event: ${r.err}\n${r.out}`);
    assert.equal(r.result.subtype, "success", JSON.stringify(r.result));
    assert.equal(r.result.is_error, false);
    assert.equal(r.result.result, "Hello from ds4.");
  } finally {
    await s.stop();
  }
});

test("Read tool round trip; the tool-result request reuses the session", { skip }, async (t) => {
  const dir = tempDir("ds4-claude-", t);
  mkdirSync(join(dir, "w"));
  const file = join(dir, "w", "hello.txt");
  writeFileSync(file, "the secret word is walnut\n");
  const trace = join(dir, "trace.jsonl");
  const read =
    "</think>\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"Read\">\n" +
    `<｜DSML｜parameter name="file_path" string="true">${file}</｜DSML｜parameter>\n` +
    "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  const s = await startServer(["--ctx", "8192", "--trace", trace, "--test-forced-output", read,
    "--test-forced-output", `</think>The word is walnut.${EOS}`]);
  try {
    const r = await claude(t, s.base, "What is the secret word in hello.txt?", join(dir, "w"));
    assert.ok(r.result, `no result event: ${r.err}\n${r.out}`);
    assert.equal(r.result.subtype, "success", JSON.stringify(r.result));
    assert.equal(r.result.result, "The word is walnut.");
    const use = r.events
      .filter((e) => e.type === "assistant")
      .flatMap((e) => e.message.content)
      .find((b) => b.type === "tool_use");
    assert.ok(use, r.out);
    assert.equal(use.name, "Read");
    assert.match(use.id, /^toolu_[0-9a-f]{32}$/);
    assert.deepEqual(use.input, { file_path: file });
    const result = r.events
      .filter((e) => e.type === "user")
      .flatMap((e) => e.message.content)
      .find((b) => b.type === "tool_result");
    assert.ok(result && JSON.stringify(result.content).includes("walnut"), r.out);
  } finally {
    await s.stop();
  }
  const lines = traceLines(trace);
  assert.equal(lines.length, 2, JSON.stringify(lines.map((l) => [l.prompt_tokens, l.cached_tokens])));
  assert.ok(!lines[0].rendered.includes("x-anthropic-billing-header"));
  const [first, second] = lines;
  // Everything the first request evaluated (its prompt and all sampled tokens but the last).
  assert.ok(
    second.cached_tokens >= first.prompt_tokens + first.completion_tokens - 1,
    JSON.stringify(lines.map((l) => [l.prompt_tokens, l.cached_tokens, l.completion_tokens])),
  );
});
