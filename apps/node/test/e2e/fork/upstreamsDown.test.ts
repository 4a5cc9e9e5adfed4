import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/node.js";
import { type RpcProxy, startProxy } from "../helpers/proxy.js";

// A new fork with no upstream answering cannot find its fork block: it exits with a message
// naming every upstream, redacted, and why each failed.
const proxies: RpcProxy[] = [];
let dir: string | undefined;

afterAll(async () => {
  for (const proxy of proxies) await proxy.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("a new fork whose upstreams are all down", () => {
  it("exits non-zero naming each upstream, redacted, with its last reason", async () => {
    // Proxies of nothing: neither forwards.
    const unavailable = await startProxy("http://127.0.0.1:9");
    const gone = await startProxy("http://127.0.0.1:9");
    proxies.push(unavailable, gone);
    unavailable.mode = "503";
    gone.mode = "reset";
    dir = mkdtempSync(join(tmpdir(), "nodex-fork-down-"));
    const secretUrl = `${unavailable.url.replace("http://", "http://user:secret@")}/path?key=secret`;
    const run = await runCli([
      "--regtest",
      "--datadir",
      dir,
      "--rpc-port",
      "0",
      "--no-p2p",
      "--fork-url",
      secretUrl,
      "--fork-url",
      gone.url,
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('"msg":"Start-up failed"');
    expect(run.stderr).toContain("no upstream answered eth_blockNumber");
    expect(run.stderr).toContain(`${unavailable.url}/path (HTTP 503; 5 attempts)`);
    expect(run.stderr).toContain(`${gone.url}/ (connection failed`);
    expect(run.stderr).not.toContain("secret");
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(unavailable.requests).toBe(5);
    expect(gone.requests).toBe(5);
  }, 30_000);
});
