import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cleanEnv, NODEX_BIN, startNode } from "../helpers/node.js";
import { HTTP_LAYER_VALUES } from "./layers.js";

// A second node started on the port of a running one must not start: on a port shared by two
// listeners the requests would be split between two chains.

const tmp = mkdtempSync(join(tmpdir(), "nodex-port-taken-"));

/**
 * Runs a node until it exits; one that starts serving instead is stopped at once (and the
 * test fails on its exit code and log).
 */
function runUntilExit(args: readonly string[]) {
  return new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [NODEX_BIN, ...args], {
      env: cleanEnv(),
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => {
      stderr += d;
      if (stderr.includes("JSON-RPC server listening")) child.kill("SIGKILL");
    });
    child.once("close", (code) => resolve({ code, stderr }));
  });
}

/** A port free a moment ago: the node is asked for it by number, as operators do. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

describe("a taken RPC port", () => {
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it.each(HTTP_LAYER_VALUES)(
    "is a start-up error with --rpc-http-layer %s, naming the address",
    async (layer) => {
      const port = await freePort();
      const first = await startNode({
        args: ["--rpc-http-layer", layer, "--rpc-port", String(port)],
      });
      try {
        expect(first.port).toBe(port);
        const { code, stderr } = await runUntilExit([
          "--regtest",
          "--no-p2p",
          "--datadir",
          join(tmp, layer),
          "--rpc-port",
          String(port),
          "--log-format",
          "json",
          "--rpc-http-layer",
          layer,
        ]);
        expect(stderr).not.toContain("JSON-RPC server listening");
        expect(code).toBe(1);
        expect(stderr).toContain("Start-up failed");
        expect(stderr).toContain(`cannot listen on 127.0.0.1:${port}: address already in use`);
        // The first node still serves every request, on its own chain.
        for (let i = 0; i < 20; i++) {
          const res = await fetch(first.url, {
            method: "POST",
            headers: { "content-type": "application/json", connection: "close" },
            body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId" }),
          });
          expect(((await res.json()) as { result: string }).result).toBe("0x21");
        }
      } finally {
        await first.stop();
      }
    },
  );

  it("naming --ws-port when that is the port taken", async () => {
    const port = await freePort();
    const first = await startNode({ args: ["--rpc-port", String(port)] });
    try {
      const { code, stderr } = await runUntilExit([
        "--regtest",
        "--no-p2p",
        "--datadir",
        join(tmp, "ws"),
        "--rpc-port",
        "0",
        "--ws-port",
        String(port),
        "--log-format",
        "json",
      ]);
      expect(stderr).not.toContain("JSON-RPC server listening");
      expect(code).toBe(1);
      expect(stderr).toContain(`cannot listen on 127.0.0.1:${port}: address already in use`);
    } finally {
      await first.stop();
    }
  });
});
