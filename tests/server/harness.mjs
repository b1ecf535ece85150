// tests/server/harness.mjs: starts the real ds4-server binary on a free loopback port and stops
// it with SIGTERM (asserting a clean exit); makes the temporary directories the tests use and
// removes them. Paths come from the environment CTest sets.
import { spawn } from "node:child_process";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test as nodeTest } from "node:test";

// test(name, fn): node:test's test, for the files that CTest runs in parts (tests/server/
// CMakeLists.txt, ds4_server_node_test). DS4_TEST_SHARD=K/N: of the file's tests, in declaration
// order, this process runs the K-th, (K+N)-th, ... (so N CTest entries that ctest -j runs side by
// side run every test exactly once, whatever tests are added). DS4_TEST_ONLY=REGEX: only the
// tests whose name matches (the ThreadSanitizer selection). A process left with no test fails:
// a selection that no longer matches anything is an error, not a pass.
const [shardIndex, shardCount] = (process.env.DS4_TEST_SHARD ?? "1/1").split("/").map(Number);
assert.ok(shardIndex >= 1 && shardIndex <= shardCount, `bad DS4_TEST_SHARD ${process.env.DS4_TEST_SHARD}`);
const only = process.env.DS4_TEST_ONLY ? new RegExp(process.env.DS4_TEST_ONLY) : null;
let declared = 0;
let selected = 0;
let checked = false;
export function test(name, fn) {
  if (!checked) {
    // After the file's top-level code has declared all its tests: with none selected, one
    // failing test (so the file's `after` hooks still stop its servers).
    checked = true;
    setImmediate(() => {
      if (selected > 0) return;
      nodeTest("harness: the selection has a test", () => {
        assert.fail(`no test selected (DS4_TEST_SHARD=${shardIndex}/${shardCount}, ` +
          `DS4_TEST_ONLY=${only ?? ""}, ${declared} declared)`);
      });
    });
  }
  if (only && !only.test(name)) return;
  if (declared++ % shardCount !== shardIndex - 1) return;
  selected++;
  nodeTest(name, fn);
}

export const SERVER = process.env.DS4_SERVER;
export const MODEL = process.env.DS4_SERVER_MODEL;

// Whatever a test leaves behind goes when the process exits, however its tests ended: servers
// still running are killed (SIGKILL), then the temporary directories are removed. CI's /tmp once
// filled up with the directories of earlier runs (disk caches, the agent CLIs' homes).
const liveServers = new Set();
const tempDirs = new Set();
process.on("exit", () => {
  for (const proc of liveServers) proc.kill("SIGKILL");
  for (const dir of tempDirs) removeDir(dir);
});

// tempDir(prefix, t): a fresh directory under the system's temporary directory (mkdtemp), removed
// with everything in it when the node:test context t ends (its after hook: passed, failed or
// thrown), or, without t (a file's `before` hook), when the process exits. A test stops its
// servers before it ends, so none still writes there.
export function tempDir(prefix, t) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(dir);
  if (t) t.after(() => removeDir(dir));
  return dir;
}

export function removeDir(dir) {
  tempDirs.delete(dir);
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

// opts.fileLimitKb: run the server under `ulimit -f` (writes past that size fail with EFBIG, a
// full disk without root).
export async function startServer(args = [], opts = {}) {
  assert.ok(SERVER && MODEL, "DS4_SERVER and DS4_SERVER_MODEL must be set");
  const argv = ["-m", MODEL, "--port", "0", "-t", "2", ...args];
  const proc = opts.fileLimitKb
    ? spawn("bash", ["-c", `ulimit -f ${opts.fileLimitKb} && exec "$0" "$@"`, SERVER, ...argv], {
        stdio: ["ignore", "pipe", "pipe"],
      })
    : spawn(SERVER, argv, { stdio: ["ignore", "pipe", "pipe"] });
  liveServers.add(proc);
  proc.on("exit", () => liveServers.delete(proc));
  let stderr = "";
  let out = "";
  proc.stderr.on("data", (d) => (stderr += d));
  const port = await new Promise((resolve, reject) => {
    proc.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    proc.on("exit", (code) => reject(new Error(`ds4-server exited ${code}: ${stderr}`)));
  });
  const exited = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
  return {
    port,
    pid: proc.pid, // with opts.fileLimitKb, bash exec's the server: the same process
    base: `http://127.0.0.1:${port}`,
    stderr: () => stderr,
    stdout: () => out,
    async stop() {
      proc.kill("SIGTERM");
      const { code, signal } = await exited;
      assert.equal(signal, null, `killed by ${signal}: ${stderr}`);
      assert.equal(code, 0, `exit code ${code}: ${stderr}`);
    },
  };
}

export async function health(base) {
  return (await fetch(`${base}/health`)).json();
}

// Polls /health until nothing runs or waits; returns the milliseconds it took.
export async function waitIdle(base, limitMs = 20000) {
  const t0 = Date.now();
  for (;;) {
    const h = await health(base);
    if (h.running === 0 && h.queued === 0) return Date.now() - t0;
    if (Date.now() - t0 > limitMs) throw new Error(`still busy after ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// The DSML tool call the servers are forced to sample (--test-forced-output) in the tool tests:
// get_weather for Paris, 3 days; and that tool declared in OpenAI chat form.
export const FORCED_WEATHER_CALL =
  "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n" +
  "<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n" +
  "<｜DSML｜parameter name=\"days\" string=\"false\"> 3</｜DSML｜parameter>\n" +
  "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
export const weatherTools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Weather for a city",
      parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } } },
    },
  },
];
