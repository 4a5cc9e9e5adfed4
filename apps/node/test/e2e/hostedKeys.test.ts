import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningNode, runCli, send, startNode } from "./helpers/node.js";
import { connect } from "./helpers/ws.js";

// Keys issued, listed and revoked with `nodex keys` while the node runs, and what each key may
// call and spend.

const req = (method: string, params: unknown[] = [], id: unknown = 7) => ({
  jsonrpc: "2.0",
  id,
  method,
  params,
});

async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 10_000) {
  const end = Date.now() + ms;
  for (;;) {
    const found = await check();
    if (found !== undefined) return found;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function keys(datadir: string, ...args: string[]) {
  return runCli(["keys", ...args, "--regtest", "--datadir", datadir]);
}

async function create(datadir: string, ...args: string[]) {
  const res = await keys(datadir, "create", ...args);
  expect(res.stderr).toContain("shown this once");
  expect(res.code).toBe(0);
  const id = /^id: +(\S+)$/m.exec(res.stdout)?.[1];
  const key = /^key: +(\S+)$/m.exec(res.stdout)?.[1];
  expect(id).toMatch(/^key_[0-9a-f]{12}$/);
  // 192 random bits, URL-safe.
  expect(key).toMatch(/^nx_[A-Za-z0-9_-]{32}$/);
  return { id: id!, key: key! };
}

async function status(url: string, key: string, method = "eth_chainId") {
  return (await send(url, req(method), { path: `/${key}` })).status;
}

describe("keys issued and revoked while the node runs", () => {
  let node: RunningNode;
  beforeAll(async () => {
    node = await startNode({ args: ["--hosted"] });
  });
  afterAll(async () => {
    await node?.stop();
  });

  it("starts hosted with no key, serves a new key soon after it is made, refuses it once revoked", async () => {
    expect(await status(node.url, "no-key-yet-0001")).toBe(401);
    const { id, key } = await create(node.datadir, "--name", "alice");
    await until("the new key", async () =>
      (await status(node.url, key)) === 200 ? true : undefined,
    );
    const ok = await send(node.url, req("eth_chainId"), { path: `/${key}` });
    expect(ok.json).toEqual({ jsonrpc: "2.0", id: 7, result: "0x21" });

    const revoked = await keys(node.datadir, "revoke", id);
    expect(revoked.code).toBe(0);
    await until("the revocation", async () =>
      (await status(node.url, key)) === 401 ? true : undefined,
    );
    const refused = await send(node.url, req("eth_chainId"), { path: `/${key}` });
    expect(refused.json).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32600, message: "unauthorized: this API key was revoked" },
    });
    expect((await keys(node.datadir, "revoke", "key_000000000000")).code).toBe(1);
  });

  it("lists keys without ever showing one, with their use today", async () => {
    const { id, key } = await create(
      node.datadir,
      "--name",
      "bob's dapp",
      "--rate",
      "500",
      "--daily",
      "100000",
    );
    await until("the key", async () => ((await status(node.url, key)) === 200 ? true : undefined));
    expect(await status(node.url, key, "eth_blockNumber")).toBe(200);
    const listed = await until("the usage", async () => {
      const res = await keys(node.datadir, "list", "--json");
      const rows = JSON.parse(res.stdout) as { id: string; unitsToday: number }[];
      const row = rows.find((r) => r.id === id);
      return row !== undefined && row.unitsToday >= 10 ? { res, row } : undefined;
    });
    expect(listed.row).toMatchObject({
      id,
      name: "bob's dapp",
      status: "active",
      rate: 500,
      daily: 100000,
    });
    expect((listed.row as unknown as { lastUsed: string }).lastUsed).toMatch(/^\d{4}-/);
    const table = await keys(node.datadir, "list");
    expect(table.stdout).toMatch(/^ID +NAME +STATUS/);
    expect(table.stdout).toContain(id);
    const digest = (await import("node:crypto")).createHash("sha256").update(key).digest("hex");
    for (const text of [
      listed.res.stdout,
      table.stdout,
      readFileSync(join(node.datadir, "api-keys.json"), "utf8"),
    ]) {
      expect(text).not.toContain(key);
      expect(text).not.toContain(key.slice(3));
    }
    expect(listed.res.stdout).not.toContain(digest);
    expect(readFileSync(join(node.datadir, "api-keys.json"), "utf8")).toContain(digest);
  });

  it("loses no key when several are made at once", async () => {
    const made = await Promise.all(
      Array.from({ length: 8 }, (_, i) => create(node.datadir, "--name", `parallel-${i}`)),
    );
    const rows = JSON.parse((await keys(node.datadir, "list", "--json")).stdout) as {
      id: string;
    }[];
    for (const { id } of made) expect(rows.map((r) => r.id)).toContain(id);
    for (const { key } of made)
      await until("each key", async () =>
        (await status(node.url, key)) === 200 ? true : undefined,
      );
  }, 120_000);

  it("refuses bad commands with exit 2 and says why", async () => {
    const cases: [string[], string][] = [
      [["create"], "nodex keys create needs --name NAME"],
      [["create", "--name", "x", "--methods", "eth", "--deny", "net"], "contradict"],
      [["create", "--name", "x", "--allow", "eth_call"], "invalid value for --allow"],
      [["create", "--name", "x", "--methods", "nope_call"], "invalid value for --methods"],
      [["create", "--name", "x", "--rate", "0"], "invalid value for --rate"],
      [["revoke"], "needs the ID"],
      [["list", "--name", "x"], "does not apply to nodex keys list"],
      [["rotate"], 'unknown action "rotate"'],
      [[], "needs an action"],
    ];
    const results = await Promise.all(cases.map(([args]) => keys(node.datadir, ...args)));
    cases.forEach(([args, message], i) => {
      expect(results[i]!.code, args.join(" ")).toBe(2);
      expect(results[i]!.stderr).toContain(message);
    });
  }, 120_000);
});

describe("per-key methods and limits", () => {
  let node: RunningNode;
  beforeAll(async () => {
    node = await startNode({ args: ["--hosted", "--ws-port", "0"] });
  });
  afterAll(async () => {
    await node?.stop();
  });
  const ready = async (made: { key: string }) => {
    await until("the key", async () =>
      (await status(node.url, made.key, "net_version")) !== 401 ? true : undefined,
    );
    return made;
  };

  it("serves only the methods of an allow list, and none of a deny list", async () => {
    const only = await ready(
      await create(node.datadir, "--name", "only", "--methods", "net,eth_blockNumber"),
    );
    const ok = await send(node.url, req("eth_blockNumber"), { path: `/${only.key}` });
    expect((ok.json as { result: string }).result).toBe("0x0");
    expect((await send(node.url, req("net_version"), { path: `/${only.key}` })).json).toEqual({
      jsonrpc: "2.0",
      id: 7,
      result: "33",
    });
    expect((await send(node.url, req("eth_chainId"), { path: `/${only.key}` })).json).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: {
        code: -32601,
        message: "the method eth_chainId is not available: it is not allowed for this API key",
      },
    });
    const deny = await ready(
      await create(node.datadir, "--name", "deny", "--deny", "eth_chainId,web3"),
    );
    const denied = await send(
      node.url,
      [req("eth_chainId", [], 1), req("web3_clientVersion", [], 2), req("eth_blockNumber", [], 3)],
      {
        path: `/${deny.key}`,
      },
    );
    const answers = denied.json as { id: number; error?: { code: number }; result?: string }[];
    expect(answers.map((a) => a.error?.code ?? a.result)).toEqual([-32601, -32601, "0x0"]);
  });

  it("serves what hosted mode turns off to the keys allowed it, and to them alone", async () => {
    const dev = await ready(
      await create(node.datadir, "--name", "dev", "--allow", "evm,txpool_content"),
    );
    const plain = await ready(await create(node.datadir, "--name", "plain"));
    expect((await send(node.url, req("evm_snapshot"), { path: `/${dev.key}` })).json).toEqual({
      jsonrpc: "2.0",
      id: 7,
      result: expect.stringMatching(/^0x[0-9a-f]+$/),
    });
    const content = await send(node.url, req("txpool_content"), { path: `/${dev.key}` });
    expect((content.json as { result: unknown }).result).toEqual({ pending: {}, queued: {} });
    for (const [method, message] of [
      ["evm_snapshot", "the evm module is disabled in hosted mode"],
      ["txpool_content", "it is disabled in hosted mode"],
      ["txpool_inspect", "it is disabled in hosted mode"],
    ]) {
      expect((await send(node.url, req(method!), { path: `/${plain.key}` })).json).toEqual({
        jsonrpc: "2.0",
        id: 7,
        error: { code: -32601, message: `the method ${method} is not available: ${message}` },
      });
    }
  });

  it("answers a request over the rate 429 with -32005 and Retry-After, counting batch members one by one", async () => {
    // 1 unit per second: eth_blockNumber (10 units) runs on a full bucket, then the bucket owes
    // 9 units: nothing more runs for 10 seconds.
    const slow = await create(node.datadir, "--name", "slow", "--rate", "1");
    await until("the key", async () =>
      (await status(node.url, slow.key, "eth_chainId")) === 200 ? true : undefined,
    );
    const batch = await send(
      node.url,
      [req("eth_blockNumber", [], 1), req("eth_blockNumber", [], 2), req("eth_chainId", [], 3)],
      { path: `/${slow.key}` },
    );
    // Some members ran: 200, the refused one answered in its place.
    expect(batch.status).toBe(200);
    expect(batch.headers.get("retry-after")).toMatch(/^\d+$/);
    const members = batch.json as {
      id: number;
      result?: string;
      error?: { code: number; message: string };
    }[];
    expect(members[0]!.result).toBe("0x0");
    expect(members[1]!.error?.code).toBe(-32005);
    expect(members[1]!.error?.message).toMatch(
      /^limit exceeded: the rate limit of 1 units per second of this API key; eth_blockNumber costs 10 units; retry in \d+ s$/,
    );
    // eth_chainId costs nothing.
    expect(members[2]!.result).toBe("0x21");
    const single = await send(node.url, req("eth_blockNumber"), { path: `/${slow.key}` });
    expect(single.status).toBe(429);
    expect(Number(single.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(single.headers.get("access-control-expose-headers")).toBe("Retry-After");
    expect((single.json as { error: { code: number } }).error.code).toBe(-32005);
  });

  it("stops a key at its daily quota until the UTC day ends", async () => {
    const daily = await create(node.datadir, "--name", "daily", "--daily", "30");
    await until("the key", async () =>
      (await status(node.url, daily.key, "eth_chainId")) === 200 ? true : undefined,
    );
    const codes: number[] = [];
    for (let i = 0; i < 4; i++) codes.push(await status(node.url, daily.key, "eth_blockNumber"));
    expect(codes).toEqual([200, 200, 200, 429]);
    const res = await send(node.url, req("eth_blockNumber"), { path: `/${daily.key}` });
    expect((res.json as { error: { message: string } }).error.message).toMatch(
      /^limit exceeded: the daily quota of 30 units of this API key \(UTC day\); eth_blockNumber costs 10 units; it frees at 00:00 UTC, in \d+ s$/,
    );
    const wait = Number(res.headers.get("retry-after"));
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(86_400);
  });

  it("answers over WebSocket with the error in the response, and drops a revoked key's connection", async () => {
    const ws = await create(node.datadir, "--name", "ws", "--rate", "1");
    await until("the key", async () =>
      (await status(node.url, ws.key, "eth_chainId")) === 200 ? true : undefined,
    );
    const client = await connect(`${node.url}/${ws.key}`);
    try {
      expect(await client.request("eth_blockNumber")).toMatchObject({ result: "0x0" });
      const over = (await client.request("eth_blockNumber")) as { error?: { code: number } };
      expect(over.error?.code).toBe(-32005);
      expect((await keys(node.datadir, "revoke", ws.id)).code).toBe(0);
      await until("the revocation", async () =>
        (await status(node.url, ws.key)) === 401 ? true : undefined,
      );
      const closed = new Promise<number>((resolve) => client.socket.once("close", resolve));
      client.send(req("eth_chainId"));
      expect(await closed).toBe(1008);
      expect(client.messages.at(-1)).toEqual({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: "unauthorized: this API key was revoked" },
      });
    } finally {
      await client.close();
    }
  });
});

describe("keyless requests in hosted mode", () => {
  it("serves the path / within the per-address limit, and other keys as ever", async () => {
    const node = await startNode({ args: ["--hosted", "--rpc-keyless-rate", "1"] });
    try {
      const first = await send(node.url, req("eth_blockNumber"), { path: "/" });
      expect(first.json).toEqual({ jsonrpc: "2.0", id: 7, result: "0x0" });
      const second = await send(node.url, req("eth_blockNumber"), { path: "/" });
      expect(second.status).toBe(429);
      expect((second.json as { error: { message: string } }).error.message).toContain(
        "of this client address",
      );
      // Hosted mode's switches hold for keyless requests too.
      const evm = await send(node.url, req("evm_mine"), { path: "/" });
      expect((evm.json as { error: { code: number } }).error.code).toBe(-32601);
      expect(await status(node.url, "wrong-key-0001")).toBe(401);
    } finally {
      await node.stop();
    }
  });
});

describe("--api-key-file", () => {
  const dir = mkdtempSync(join(tmpdir(), "nodex-keyfile-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("serves the keys of the file, follows its changes, keeps the last good keys on a bad one", async () => {
    const file = join(dir, "keys.txt");
    writeFileSync(file, "# provisioned\nfirst-file-key-0001\n\n");
    const node = await startNode({ args: ["--api-key-file", file] });
    try {
      expect(await status(node.url, "first-file-key-0001")).toBe(200);
      expect(await status(node.url, "second-file-key-0002")).toBe(401);
      appendFileSync(file, "second-file-key-0002\n");
      await until("the second key", async () =>
        (await status(node.url, "second-file-key-0002")) === 200 ? true : undefined,
      );
      writeFileSync(file, "second-file-key-0002\nbad key!\n");
      await until("the warning", async () =>
        node.logs().includes("API key file not reloaded") ? true : undefined,
      );
      expect(node.logs()).toContain(`${file}:2: an API key is 8-128 characters`);
      expect(node.logs()).not.toContain("bad key!");
      expect(await status(node.url, "first-file-key-0001")).toBe(200);
      writeFileSync(file, "second-file-key-0002\n");
      await until("the removal", async () =>
        (await status(node.url, "first-file-key-0001")) === 401 ? true : undefined,
      );
    } finally {
      await node.stop();
    }
  });

  it("refuses to start on a file it cannot read", async () => {
    const missing = join(dir, "missing.txt");
    await expect(startNode({ args: ["--api-key-file", missing] })).rejects.toThrow(
      /cannot read .*missing\.txt/,
    );
    const bad = join(dir, "bad.txt");
    writeFileSync(bad, "short\n");
    await expect(startNode({ args: ["--api-key-file", bad] })).rejects.toThrow(
      /bad\.txt:1: an API key is 8-128 characters/,
    );
  });
});

describe("time budgets of method classes", () => {
  it("stops a trace at the traces' budget, and a call at the calls', and says so", async () => {
    const node = await startNode({
      args: [
        "--rpc-modules",
        "eth,net,web3,rpc,debug",
        "--rpc-budget-trace-ms",
        "50",
        "--rpc-budget-call-ms",
        "50",
      ],
    });
    try {
      // Creation code that loops until its 30,000,000 gas run out: far more than 50 ms of
      // tracing. The tracer's own error says that it stopped, not only that the answer left.
      const loop = { data: "0x5b600056", gas: "0x1c9c380" };
      for (const config of [{ tracer: "callTracer" }, {}]) {
        const res = await send(node.url, req("debug_traceCall", [loop, "latest", config]));
        expect(res.json).toEqual({
          jsonrpc: "2.0",
          id: 7,
          error: { code: -32011, message: "the trace ran over the request's time limit" },
        });
      }
      // A contract whose code is that loop: a call of it, or an estimate, stops at the budget.
      const from = ((await send(node.url, req("eth_accounts"))).json as { result: string[] })
        .result[0];
      const sent = await send(
        node.url,
        req("eth_sendTransaction", [
          { from, data: "0x6004600c60003960046000f35b600056", gas: "0x100000" },
        ]),
      );
      const hash = (sent.json as { result: string }).result;
      const receipt = await send(node.url, req("eth_getTransactionReceipt", [hash]));
      const to = (receipt.json as { result: { contractAddress: string } }).result.contractAddress;
      for (const [method, params] of [
        ["eth_call", [{ to, gas: "0x1c9c380" }, "latest"]],
        ["eth_estimateGas", [{ to }]],
      ] as const) {
        expect((await send(node.url, req(method, [...params]))).json).toEqual({
          jsonrpc: "2.0",
          id: 7,
          error: { code: -32011, message: "the call ran over its time budget" },
        });
      }
      // What ends within its budget is answered as ever.
      const call = await send(node.url, req("eth_call", [{ data: "0x00" }, "latest"]));
      expect(call.json).toEqual({ jsonrpc: "2.0", id: 7, result: "0x" });
    } finally {
      await node.stop();
    }
  });

  it("refuses a budget that is not a time", async () => {
    const res = await runCli(["--regtest", "--rpc-budget-logs-ms", "soon"]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain("invalid value for --rpc-budget-logs-ms");
  });
});

describe("the pool's share of a key", () => {
  it("holds a key's waiting transactions to --txpool-key-share, and no other key's", async () => {
    const node = await startNode({
      args: ["--hosted", "--txpool-key-share", "2", "--no-automine"],
    });
    try {
      const a = await create(node.datadir, "--name", "a");
      const b = await create(node.datadir, "--name", "b");
      for (const k of [a, b])
        await until("the key", async () =>
          (await status(node.url, k.key)) === 200 ? true : undefined,
        );
      // Development accounts 0 to 2: each sends from its own address.
      const wallets = [
        "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
        "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
        "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
      ].map((k) => new Wallet(k));
      const raw = (w: Wallet) =>
        w.signTransaction({
          to: "0x000000000000000000000000000000000000abcd",
          value: 1n,
          gasLimit: 21_000n,
          gasPrice: 0n,
          nonce: 0,
          chainId: 33,
          type: 0,
        });
      const sendRaw = async (key: string, w: Wallet) =>
        (await send(node.url, req("eth_sendRawTransaction", [await raw(w)]), { path: `/${key}` }))
          .json as { result?: string; error?: { code: number; message: string } };
      expect((await sendRaw(a.key, wallets[0]!)).result).toMatch(/^0x[0-9a-f]{64}$/);
      expect((await sendRaw(a.key, wallets[1]!)).result).toMatch(/^0x[0-9a-f]{64}$/);
      expect((await sendRaw(a.key, wallets[2]!)).error).toEqual({
        code: -32010,
        message:
          "transaction pool is full for this API key: it has 2 transactions waiting (the share of one key is 2)",
      });
      expect((await sendRaw(b.key, wallets[2]!)).result).toMatch(/^0x[0-9a-f]{64}$/);
      const pool = await send(node.url, req("txpool_status"), { path: `/${b.key}` });
      expect((pool.json as { result: unknown }).result).toEqual({ pending: 3, queued: 0 });
    } finally {
      await node.stop();
    }
  }, 120_000);
});
