import { keccak256, toUtf8Bytes, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployCode } from "../helpers/bytecode.js";
import { call, type RunningNode, send, startNode } from "../helpers/node.js";
import { connect, type WsClient } from "../helpers/ws.js";

// JSON-RPC over WebSocket as a raw client sees it: requests and batches, eth_subscribe of each
// kind with its notifications in order, removed logs on evm_revert, the limits, hosted mode's
// key path, and --ws-port. Close codes on every --rpc-http-layer value: http/conformance.test.ts.
const LAYERS = ["node"];

const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const PING = keccak256(toUtf8Bytes("Ping(uint256)"));
/** Runtime: mstore(0, calldataload(0)); log1(0, 32, Ping(uint256)); stop. */
const RUNTIME = `0x6000356000527f${PING.slice(2)}60206000a100`;

const clients: WsClient[] = [];
async function open(url: string): Promise<WsClient> {
  const c = await connect(url);
  clients.push(c);
  return c;
}
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
});

async function ok(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(url, method, params);
  expect(res.error).toBeUndefined();
  return res.result;
}

describe.each(LAYERS)("WebSocket on the %s HTTP layer", (layer) => {
  let node: RunningNode;
  let wallet: Wallet;
  let contract: string;
  let nonce = 0;
  const url = () => node.url;

  beforeAll(async () => {
    node = await startNode({
      args: ["--rpc-http-layer", layer, "--ws-max-subscriptions", "4"],
    });
    wallet = new Wallet(KEY0);
    contract = await deploy();
  });
  afterAll(async () => {
    await node?.stop();
  });

  async function sendTx(to: string | null, data: string): Promise<string> {
    const raw = await wallet.signTransaction({
      to,
      data,
      nonce: nonce++,
      gasLimit: 200_000n,
      gasPrice: 100_000_000n,
      chainId: 33n,
      type: 0,
    });
    return (await ok(url(), "eth_sendRawTransaction", [raw])) as string;
  }

  async function deploy(): Promise<string> {
    const hash = await sendTx(null, deployCode(RUNTIME));
    const receipt = (await ok(url(), "eth_getTransactionReceipt", [hash])) as {
      contractAddress: string;
    };
    return receipt.contractAddress;
  }

  const word = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

  it("answers requests, batches, malformed messages and viem's keep-alive with id null", async () => {
    const ws = await open(url());
    expect(await ws.request("eth_chainId")).toMatchObject({ result: "0x21" });
    ws.send([
      { jsonrpc: "2.0", id: "a", method: "net_version" },
      { jsonrpc: "2.0", id: "b", method: "eth_nope" },
    ]);
    const batch = await ws.next((m) => Array.isArray(m));
    expect(batch).toEqual([
      { jsonrpc: "2.0", id: "a", result: "33" },
      {
        jsonrpc: "2.0",
        id: "b",
        error: { code: -32601, message: expect.stringContaining("eth_nope") },
      },
    ]);
    ws.send("{not json");
    expect(await ws.next((m) => (m.error as { code?: number })?.code === -32700)).toMatchObject({
      id: null,
    });
    ws.send({ jsonrpc: "2.0", id: null, method: "net_version", params: [] });
    expect(await ws.next((m) => m.id === null && m.result !== undefined)).toEqual({
      jsonrpc: "2.0",
      id: null,
      result: "33",
    });
  });

  it("over HTTP, eth_subscribe answers -32601 notifications not supported", async () => {
    const res = await call(url(), "eth_subscribe", ["newHeads"]);
    expect(res.error).toMatchObject({ code: -32601 });
    expect((res.error as { message: string }).message).toMatch(/^notifications not supported/);
  });

  it("newHeads: every new block's header, in order, until eth_unsubscribe", async () => {
    const ws = await open(url());
    const sub = (await ws.request("eth_subscribe", ["newHeads"])).result as string;
    expect(sub).toMatch(/^0x[0-9a-f]{32}$/);
    for (let i = 0; i < 3; i++) await ok(url(), "evm_mine");
    const heads = (await ws.notifications(sub, 3)) as { number: string; hash: string }[];
    for (const head of heads) {
      const block = (await ok(url(), "eth_getBlockByNumber", [head.number, false])) as Record<
        string,
        unknown
      >;
      const { transactions: _t, uncles: _u, size: _s, ...header } = block;
      expect(head).toEqual(header);
    }
    expect(heads.map((h) => Number(h.number))).toEqual(
      [0, 1, 2].map((i) => Number(heads[0]!.number) + i),
    );
    expect(await ws.request("eth_unsubscribe", [sub])).toMatchObject({ result: true });
    expect(await ws.request("eth_unsubscribe", [sub])).toMatchObject({ result: false });
    const count = ws.messages.length;
    await ok(url(), "evm_mine");
    await ws.request("eth_blockNumber");
    expect(ws.messages.slice(count).filter((m) => (m as { method?: string }).method)).toEqual([]);
  });

  it("a subscription's id is answered before its first notification, in a batch too", async () => {
    const ws = await open(url());
    ws.send([
      { jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: ["newBlockHeaders"] },
      { jsonrpc: "2.0", id: 2, method: "evm_mine" },
    ]);
    const answer = (await ws.next((m) => Array.isArray(m))) as unknown as { result: string }[];
    const sub = answer[0]!.result;
    const at = ws.messages.findIndex((m) => Array.isArray(m));
    await ws.notifications(sub, 1);
    const first = ws.messages.findIndex(
      (m) => (m as { params?: { subscription?: string } }).params?.subscription === sub,
    );
    expect(first).toBeGreaterThan(at);
    await ws.request("eth_unsubscribe", [sub]);
  });

  it("logs: matching logs as they are mined; removed: true for those evm_revert takes away", async () => {
    const ws = await open(url());
    const sub = (await ws.request("eth_subscribe", ["logs", { address: contract, topics: [PING] }]))
      .result as string;
    const other = (await ws.request("eth_subscribe", ["logs", { topics: [word(1)] }]))
      .result as string;
    const snapshot = await ok(url(), "evm_snapshot");
    await sendTx(contract, word(7));
    await sendTx(contract, word(8));
    const added = (await ws.notifications(sub, 2)) as Record<string, unknown>[];
    expect(added.map((l) => [l.data, l.removed])).toEqual([
      [word(7), false],
      [word(8), false],
    ]);
    for (const log of added) {
      const receipt = (await ok(url(), "eth_getTransactionReceipt", [log.transactionHash])) as {
        logs: unknown[];
      };
      expect(receipt.logs).toEqual([log]);
    }
    expect(await ok(url(), "evm_revert", [snapshot])).toBe(true);
    nonce -= 2;
    const all = (await ws.notifications(sub, 4)) as Record<string, unknown>[];
    expect(all.slice(2)).toEqual(added.map((l) => ({ ...l, removed: true })));
    await sendTx(contract, word(9));
    const after = (await ws.notifications(sub, 5)) as Record<string, unknown>[];
    expect(after[4]).toMatchObject({ data: word(9), removed: false });
    expect(
      ws.messages.filter(
        (m) => (m as { params?: { subscription?: string } }).params?.subscription === other,
      ),
    ).toEqual([]);
  });

  it("newPendingTransactions: hashes, or whole transactions with true", async () => {
    const ws = await open(url());
    const hashes = (await ws.request("eth_subscribe", ["newPendingTransactions"])).result as string;
    const full = (await ws.request("eth_subscribe", ["pendingTransactions", true]))
      .result as string;
    const hash = await sendTx(contract, word(3));
    expect(await ws.notifications(hashes, 1)).toEqual([hash]);
    const [tx] = (await ws.notifications(full, 1)) as Record<string, unknown>[];
    expect(tx).toMatchObject({
      hash,
      from: wallet.address.toLowerCase(),
      to: contract,
      input: word(3),
      blockHash: null,
      blockNumber: null,
    });
  });

  it("syncing is accepted; a node alone never syncs, so it sends nothing", async () => {
    const ws = await open(url());
    const sub = (await ws.request("eth_subscribe", ["syncing"])).result as string;
    expect(sub).toMatch(/^0x[0-9a-f]{32}$/);
    expect(await ws.request("eth_unsubscribe", [sub])).toMatchObject({ result: true });
  });

  it("refuses unknown kinds, stray options and more than --ws-max-subscriptions", async () => {
    const ws = await open(url());
    expect((await ws.request("eth_subscribe", ["blocks"])).error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('unknown subscription "blocks"'),
    });
    expect((await ws.request("eth_subscribe", ["newHeads", {}])).error).toMatchObject({
      code: -32602,
    });
    expect(
      (await ws.request("eth_subscribe", ["logs", { blockHash: word(1) }])).error,
    ).toMatchObject({ code: -32602 });
    for (let i = 0; i < 4; i++)
      expect((await ws.request("eth_subscribe", ["newHeads"])).result).toBeTypeOf("string");
    expect((await ws.request("eth_subscribe", ["newHeads"])).error).toMatchObject({
      code: -32011,
      message: expect.stringContaining("at most 4"),
    });
  });

  it("a connection's subscriptions end with it", async () => {
    const ws = await connect(url());
    const sub = (await ws.request("eth_subscribe", ["newHeads"])).result as string;
    expect(sub).toBeTypeOf("string");
    await ws.close();
    await ok(url(), "evm_mine");
    const again = await open(url());
    expect(await again.request("eth_unsubscribe", [sub])).toMatchObject({ result: false });
  });
});

describe("WebSocket limits and listeners", () => {
  it("hosted mode: the API key is the last path segment of the ws:// URL too", async () => {
    const key = "ws-test-key-0123";
    const node = await startNode({ args: ["--api-key", key] });
    try {
      const ws = await open(`${node.url}/${key}`);
      expect(await ws.request("eth_chainId")).toMatchObject({ result: "0x21" });
      await expect(connect(`${node.url}/wrong-key-0000`)).rejects.toMatchObject({ status: 401 });
      await expect(connect(node.url)).rejects.toMatchObject({ status: 401 });
    } finally {
      await node.stop();
    }
  });

  it("--ws-port serves WebSocket alone; past --ws-max-connections an upgrade gets 503", async () => {
    const node = await startNode({ args: ["--ws-port", "0", "--ws-max-connections", "2"] });
    try {
      const line = node
        .logs()
        .split("\n")
        .find((l) => l.includes('"wsOnly"'))!;
      const wsOnly = (JSON.parse(line) as { wsOnly: string }).wsOnly;
      expect(wsOnly).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
      const a = await open(wsOnly);
      expect(await a.request("eth_chainId")).toMatchObject({ result: "0x21" });
      const plain = await send(wsOnly.replace(/^ws/, "http"), {
        jsonrpc: "2.0",
        id: 1,
        method: "eth_chainId",
      });
      expect(plain.status).toBe(426);
      expect(plain.text).toContain("WebSocket only");
      const b = await open(node.url);
      expect(await b.request("eth_chainId")).toMatchObject({ result: "0x21" });
      await expect(connect(node.url)).rejects.toMatchObject({ status: 503 });
      await b.close();
      // The slot is free again once the server saw the close.
      let c: WsClient | undefined;
      for (let i = 0; i < 50 && c === undefined; i++) {
        c = await connect(node.url).catch(() => undefined);
        if (c === undefined) await new Promise((r) => setTimeout(r, 50));
      }
      expect(c).toBeDefined();
      clients.push(c!);
    } finally {
      await node.stop();
    }
  });
});

describe("a WebSocket client that does not read", () => {
  it.each(LAYERS)(
    "on %s: is dropped past --ws-max-buffer-bytes, with a logged reason, while the node serves on",
    async (layer) => {
      const node = await startNode({
        args: ["--rpc-http-layer", layer, "--ws-max-buffer-bytes", "65536"],
      });
      try {
        const wallet = new Wallet(KEY0);
        // A contract of 12,000 bytes: each eth_getCode answer is ~24 kB.
        const raw = await wallet.signTransaction({
          to: null,
          data: deployCode(`0x${"5b".repeat(12_000)}`),
          nonce: 0,
          gasLimit: 3_000_000n,
          gasPrice: 100_000_000n,
          chainId: 33n,
          type: 0,
        });
        const hash = (await ok(node.url, "eth_sendRawTransaction", [raw])) as string;
        const { contractAddress } = (await ok(node.url, "eth_getTransactionReceipt", [hash])) as {
          contractAddress: string;
        };
        const slow = await open(node.url);
        const sub = (await slow.request("eth_subscribe", ["newHeads"])).result as string;
        expect(sub).toBeTypeOf("string");
        const closed = new Promise<void>((resolve) => slow.socket.once("close", () => resolve()));
        slow.socket.pause();
        const batch = Array.from({ length: 200 }, (_, i) => ({
          jsonrpc: "2.0",
          id: i,
          method: "eth_getCode",
          params: [contractAddress, "latest"],
        }));
        // ~5 MB per batch: far more than the socket buffers hold, unread.
        for (let i = 0; i < 12; i++) slow.send(batch);
        const deadline = Date.now() + 30_000;
        while (!node.logs().includes("WebSocket client dropped") && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 100));
        const line = node
          .logs()
          .split("\n")
          .find((l) => l.includes("WebSocket client dropped"));
        expect(line).toBeDefined();
        expect(JSON.parse(line!)).toMatchObject({ level: "warn", limit: 65536 });
        // The node serves on: over HTTP and to another WebSocket client.
        expect(await ok(node.url, "eth_chainId")).toBe("0x21");
        const other = await open(node.url);
        const heads = (await other.request("eth_subscribe", ["newHeads"])).result as string;
        await ok(node.url, "evm_mine");
        expect(await other.notifications(heads, 1)).toHaveLength(1);
        // Once it reads again, the dropped client finds its connection closed.
        slow.socket.resume();
        await closed;
      } finally {
        await node.stop();
      }
    },
    60_000,
  );
});
