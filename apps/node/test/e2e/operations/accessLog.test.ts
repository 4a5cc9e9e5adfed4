import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { call, runCli, send, startNode } from "../helpers/node.js";
import { connect } from "../helpers/ws.js";

// --rpc-access-log: one JSON line per HTTP request and per WebSocket message, with the fields
// an operator reads (time, address, key id, methods, status, error codes, duration, bytes),
// never the API key; every line of an answered request is in the file once the node stopped.
const KEY = "access-log-test-key-01";
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Line {
  readonly time: string;
  readonly transport: "http" | "ws";
  readonly remote?: string;
  readonly key?: string;
  readonly httpMethod?: string;
  readonly status?: number;
  readonly methods: readonly string[];
  readonly calls: number;
  readonly errors: readonly number[];
  readonly ms: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
}

function lines(text: string): Line[] {
  return text
    .split("\n")
    .filter((l) => l.startsWith('{"time"'))
    .map((l) => JSON.parse(l) as Line);
}

/** A POST with `Expect: 100-continue`, its body sent once invited; the status answered. */
function expectContinue(url: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(body)),
        expect: "100-continue",
      },
    });
    req.once("continue", () => req.end(body));
    req.once("response", (res) => {
      res.resume();
      res.once("end", () => resolve(res.statusCode ?? 0));
    });
    req.once("error", reject);
  });
}

describe("--rpc-access-log", () => {
  it("writes a line per request and per message, with no key, all there after a stop", async () => {
    const dir = mkdtempSync(join(tmpdir(), "nodex-access-"));
    dirs.push(dir);
    const file = join(dir, "access.log");
    const node = await startNode({ args: ["--api-key", KEY, "--rpc-access-log", file] });
    const url = `${node.url}/${KEY}`;
    const single = { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] };
    const res = await send(url, single);
    expect(res.status).toBe(200);
    const batch = [
      ...Array.from({ length: 18 }, (_, i) => ({
        jsonrpc: "2.0",
        id: i,
        method: "eth_blockNumber",
      })),
      { jsonrpc: "2.0", id: 18, method: "no_suchMethod" },
      { jsonrpc: "2.0", id: 19, method: "eth_getBalance", params: ["0x1"] },
    ];
    const batchRes = await send(url, batch);
    expect(batchRes.status).toBe(200);
    expect((await send(`${node.url}/wrong-key-0000`, single)).status).toBe(401);
    const ws = await connect(url.replace(/^http/, "ws"));
    expect((await ws.request("eth_blockNumber")).result).toBe("0x0");
    expect((await ws.request("eth_getBalance", ["0x1"])).error).toBeDefined();
    await ws.close();
    // Expect: 100-continue: the head is looked at before the body is invited; one line still.
    const continued = await expectContinue(url, JSON.stringify(single));
    expect(continued).toBe(200);
    // Many at once: all are written, none lost at the stop right after.
    const burst = 200;
    await Promise.all(Array.from({ length: burst }, () => call(url, "eth_blockNumber")));
    expect(await node.stop()).toBe(0);

    const text = readFileSync(file, "utf8");
    expect(text).not.toContain(KEY);
    expect(text.endsWith("\n")).toBe(true);
    const all = lines(text);
    // 3 HTTP requests, the WebSocket upgrade, 2 messages, the Expect request, the burst.
    expect(all.length).toBe(3 + 1 + 2 + 1 + burst);
    expect(all[6]).toMatchObject({ status: 200, methods: ["eth_chainId"], calls: 1 });

    const [first, second, refused, upgrade, m1, m2] = all;
    expect(first).toMatchObject({
      transport: "http",
      remote: "127.0.0.1",
      httpMethod: "POST",
      status: 200,
      methods: ["eth_chainId"],
      calls: 1,
      errors: [],
      bytesIn: Buffer.byteLength(JSON.stringify(single)),
      bytesOut: Buffer.byteLength(res.text),
    });
    expect(Date.parse(first!.time)).not.toBeNaN();
    expect(first!.ms).toBeGreaterThanOrEqual(0);
    // A batch lists its methods, bounded, and says how many there were.
    expect(second!.calls).toBe(20);
    expect(second!.methods).toEqual(Array(16).fill("eth_blockNumber"));
    expect(second!.errors).toEqual([-32601, -32602]);
    expect(second!.bytesOut).toBe(Buffer.byteLength(batchRes.text));
    expect(refused).toMatchObject({ status: 401, methods: [], calls: 0, errors: [-32600] });
    expect(upgrade).toMatchObject({ transport: "http", httpMethod: "GET", status: 101 });
    expect(m1).toMatchObject({ transport: "ws", methods: ["eth_blockNumber"], errors: [] });
    expect(m1!.remote).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(m2).toMatchObject({ transport: "ws", methods: ["eth_getBalance"], errors: [-32602] });
    for (const line of all) {
      expect(Object.keys(line)).not.toContain("path");
      expect(line.bytesIn).toBeGreaterThanOrEqual(0);
    }
  });

  it("writes to standard output with -", async () => {
    const node = await startNode({ args: ["--rpc-access-log", "-"] });
    try {
      expect((await call(node.url, "eth_blockNumber")).result).toBe("0x0");
    } finally {
      await node.stop();
    }
    const out = lines(node.stdout());
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ transport: "http", methods: ["eth_blockNumber"], status: 200 });
  });

  it("refuses to start when the file cannot be opened", async () => {
    const datadir = mkdtempSync(join(tmpdir(), "nodex-access-"));
    dirs.push(datadir);
    const out = await runCli([
      "--regtest",
      "--no-p2p",
      "--rpc-port",
      "0",
      "--datadir",
      datadir,
      "--rpc-access-log",
      "/nonexistent-dir/access.log",
    ]);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain("cannot open the access log /nonexistent-dir/access.log: ENOENT");
  });
});
