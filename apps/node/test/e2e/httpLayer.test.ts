import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { call, cleanEnv, NODEX_BIN, startNode } from "./helpers/node.js";

// Which HTTP layer serves: uWebSockets.js ships binaries for Node 16, 18 and 20 (ABI 93, 108,
// 115) only. `auto` falls back to node:http elsewhere; `uws` named there is a start-up error.
const uwsLoads = ["93", "108", "115"].includes(process.versions.modules);

const tmp = mkdtempSync(join(tmpdir(), "nodex-http-layer-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs the node until it exits (or is stopped after `ms`); exit code and standard error. */
function runUntilExit(args: readonly string[], ms = 20_000) {
  return new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [NODEX_BIN, ...args], {
      env: cleanEnv(),
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), ms);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe(`the HTTP layer on Node ${process.version}`, () => {
  it(`--rpc-http-layer auto serves with ${uwsLoads ? "uws" : "node:http and warns"}`, async () => {
    const node = await startNode({ args: ["--rpc-http-layer", "auto"] });
    try {
      expect(node.logs()).toContain(`"http":"${uwsLoads ? "uws" : "node"}"`);
      const warned = node.logs().includes("uWebSockets.js is not available on this Node version");
      expect(warned).toBe(!uwsLoads);
      expect((await call(node.url, "eth_chainId")).result).toMatch(/^0x/);
    } finally {
      await node.stop();
    }
  });

  it("the default is auto", async () => {
    const node = await startNode();
    try {
      expect(node.logs()).toContain(`"http":"${uwsLoads ? "uws" : "node"}"`);
    } finally {
      await node.stop();
    }
  });

  it.runIf(uwsLoads)("--rpc-http-layer uws serves with uws", async () => {
    const node = await startNode({ args: ["--rpc-http-layer", "uws"] });
    try {
      expect(node.logs()).toContain('"http":"uws"');
    } finally {
      await node.stop();
    }
  });

  it.skipIf(uwsLoads)(
    "--rpc-http-layer uws is a start-up error saying what is available",
    async () => {
      const { code, stderr } = await runUntilExit([
        "--regtest",
        "--datadir",
        join(tmp, "uws"),
        "--rpc-port",
        "0",
        "--log-format",
        "json",
        "--rpc-http-layer",
        "uws",
      ]);
      expect(code).toBe(1);
      expect(stderr).toContain("Start-up failed");
      expect(stderr).toContain(`is not available on Node ${process.version}`);
      expect(stderr).toContain("HTTP layers available here: auto, node");
      expect(stderr).not.toContain("JSON-RPC server listening");
    },
  );
});
