// tests/clients/opencode_test.mjs: the real opencode CLI (npm opencode-ai, pinned in
// tests/clients) running `opencode run --format json` with the @ai-sdk/openai-compatible provider
// block of docs/server.md against ds4-server's /v1/chat/completions on loopback, tiny model on the
// CPU: a plain turn completes with the text the hidden --test-forced-output hook supplies as the
// first output of requests with tools (opencode's untooled title request samples freely).
// opencode's ~7k-token prompt takes ~45 s to prefill on CI's CPU, so this is its only test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer, tempDir } from "../server/harness.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const OPENCODE = join(here, "node_modules", ".bin", "opencode");
// scripts/setup.sh installs it; without it the test is skipped and says why.
const skip = existsSync(OPENCODE) ? false : `${OPENCODE} is missing: run scripts/setup.sh`;
const EOS = "<｜end▁of▁sentence｜>";

test("opencode run: a plain turn over chat completions", { skip }, async (t) => {
  // HOME (opencode's ~95 MB of caches) and TMPDIR (the native libraries its binary unpacks, ~5 MB
  // a run) inside dir, which the test's end removes.
  const dir = tempDir("ds4-opencode-", t);
  mkdirSync(join(dir, "w"));
  mkdirSync(join(dir, "tmp"));
  const s = await startServer(["--ctx", "16384", "--test-forced-output", `Hello from ds4.${EOS}`]);
  let r;
  try {
    const config = {
      $schema: "https://opencode.ai/config.json",
      provider: {
        ds4: {
          name: "DwarfStar (local)",
          npm: "@ai-sdk/openai-compatible",
          options: { baseURL: `${s.base}/v1`, apiKey: "dsv4-local" },
          models: { "deepseek-chat": { name: "DeepSeek V4 (local)", limit: { context: 16384, output: 16 } } },
        },
      },
    };
    const env = {
      PATH: process.env.PATH,
      HOME: dir,
      TMPDIR: join(dir, "tmp"),
      OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_AUTOUPDATE: "1",
    };
    r = await new Promise((resolve) => {
      const p = spawn(OPENCODE, ["run", "Say hello", "-m", "ds4/deepseek-chat", "--format", "json"], {
        env,
        cwd: join(dir, "w"),
        stdio: ["ignore", "pipe", "pipe"],
      });
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
  } finally {
    await s.stop();
  }
  assert.equal(r.code, 0, r.err);
  const events = r.out.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
  const text = events.filter((e) => e.type === "text").map((e) => e.part.text).join("");
  assert.equal(text, "Hello from ds4.", r.out);
  const finish = events.find((e) => e.type === "step_finish");
  assert.ok(finish, r.out);
  assert.equal(finish.part.reason, "stop");
  assert.ok(finish.part.tokens.input > 0);
});
