// tests/clients/codex_test.mjs: the real Codex CLI (npm @openai/codex, pinned in tests/clients)
// running `codex exec --json` against ds4-server's /v1/responses on loopback (a provider with
// wire_api = "responses"), tiny model on the CPU. The hidden --test-forced-output hook supplies
// the first output tokens of each request with tools (the model still evaluates each): the model
// calls exec_command, Codex runs the shell command and sends its output back as
// function_call_output, the answer comes back as the turn's agent message, and the second
// request reuses the session (cached tokens = everything the first request evaluated). One run
// covers the plain-turn path too: Codex's ~6k-token prompt takes ~25 s to prefill on CI's CPU.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer, tempDir } from "../server/harness.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const CODEX = join(here, "node_modules", ".bin", "codex");
// scripts/setup.sh installs it; without it the test is skipped and says why.
const skip = existsSync(CODEX) ? false : `${CODEX} is missing: run scripts/setup.sh`;
const EOS = "<｜end▁of▁sentence｜>";

function run(cmd, args, { env, cwd }) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    const timer = setTimeout(() => p.kill("SIGKILL"), 200000);
    p.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

test("codex exec: shell tool round trip over /v1/responses, reused session", { skip }, async (t) => {
  const dir = tempDir("ds4-codex-", t);
  const work = join(dir, "w");
  const home = join(dir, "codex-home");
  const tmp = join(dir, "tmp");  // Codex's own temporary files, removed with dir
  mkdirSync(work);
  mkdirSync(home);
  mkdirSync(tmp);
  writeFileSync(join(work, "hello.txt"), "the secret word is walnut\n");
  const trace = join(dir, "trace.jsonl");
  const call =
    "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"exec_command\">\n" +
    "<｜DSML｜parameter name=\"cmd\" string=\"true\">cat hello.txt</｜DSML｜parameter>\n" +
    "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  const s = await startServer(["--ctx", "16384", "--trace", trace, "--test-forced-output", call,
    "--test-forced-output", `The word is walnut.${EOS}`]);
  let r;
  try {
    writeFileSync(
      join(home, "config.toml"),
      [
        'model = "deepseek-chat"',
        'model_provider = "ds4"',
        "model_context_window = 16384",
        "",
        "[model_providers.ds4]",
        'name = "DwarfStar (local)"',
        `base_url = "${s.base}/v1"`,
        'wire_api = "responses"',
        "stream_max_retries = 0",
        "request_max_retries = 0",
        "",
        "[analytics]",
        "enabled = false",
        "",
      ].join("\n"),
    );
    const env = { PATH: process.env.PATH, HOME: dir, CODEX_HOME: home, TMPDIR: tmp };
    r = await run(CODEX, ["exec", "--skip-git-repo-check", "--json", "-s", "danger-full-access",
      "What is the secret word in hello.txt?"], { env, cwd: work });
  } finally {
    await s.stop();
  }
  const events = r.out.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
  const items = events.filter((e) => e.type === "item.completed").map((e) => e.item);
  assert.ok(events.some((e) => e.type === "turn.completed"), `${r.err}\n${r.out}`);
  const cmd = items.find((i) => i.type === "command_execution");
  assert.ok(cmd, r.out);
  assert.match(cmd.command, /cat hello\.txt/);
  assert.match(cmd.aggregated_output, /walnut/);
  assert.equal(items.filter((i) => i.type === "agent_message").at(-1).text, "The word is walnut.");

  const lines = readFileSync(trace, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(lines.length, 2, r.out);
  assert.ok(lines.every((l) => l.endpoint === "responses"));
  const [first, second] = lines;
  assert.ok(second.rendered.includes("walnut"), "the command output went back to the model");
  assert.ok(
    second.cached_tokens >= first.prompt_tokens + first.completion_tokens - 1,
    JSON.stringify(lines.map((l) => [l.prompt_tokens, l.cached_tokens, l.completion_tokens])),
  );
});
