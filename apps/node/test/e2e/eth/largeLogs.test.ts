import { JsonRpcProvider, keccak256, toUtf8Bytes, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployCode } from "../helpers/bytecode.js";
import { call, type RunningNode, send, startNode } from "../helpers/node.js";
import { RawClient } from "../helpers/rawHttp.js";
import { connect } from "../helpers/ws.js";

// eth_getLogs answers of several hundred kB (made as bytes, on the main thread or handed over by
// a worker thread, and written after their head): the same text over HTTP, alone, pipelined,
// from several connections at once and in a batch, over WebSocket, through eth_getFilterLogs,
// and for a block with more logs than the main thread answers itself.
const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const BIG = keccak256(toUtf8Bytes("Big()"));
/** 48 KiB of zeros per log. */
const DATA_BYTES = 0xc000;
/** Runtime: log1(0, 0xc000, Big()) three times; stop. */
const RUNTIME = `0x${`7f${BIG.slice(2)}61c0006000a1`.repeat(3)}00`;
/** Runtime: log0(0, 0) as many times as the first calldata word says; stop. */
const LOOP_RUNTIME = "0x6000355b8015601457600080a0600190036003565b00";
/** More logs than the main thread answers itself (LOCAL_LOGS_BUDGET): a worker thread does. */
const MANY = 1_001;

interface LogJson {
  removed: boolean;
  logIndex: string;
  transactionIndex: string;
  transactionHash: string;
  blockHash: string;
  blockNumber: string;
  address: string;
  data: string;
  topics: string[];
}

let node: RunningNode;
let provider: JsonRpcProvider;
let contract: string;
let blocks: number[];
/** The logs the receipts name, as eth_getLogs writes them (keys in the spec's order). */
let expected: LogJson[];
/** The block with MANY logs, and its logs as eth_getLogs writes them. */
let manyBlock: number;
let manyExpected: LogJson[];
const asLog = (l: LogJson): LogJson => ({
  removed: false,
  logIndex: l.logIndex,
  transactionIndex: l.transactionIndex,
  transactionHash: l.transactionHash,
  blockHash: l.blockHash,
  blockNumber: l.blockNumber,
  address: l.address,
  data: l.data,
  topics: l.topics,
});
beforeAll(async () => {
  node = await startNode();
  provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
  const wallet = new Wallet(KEY0, provider);
  contract = (await (await wallet.sendTransaction({ data: deployCode(RUNTIME) })).wait())!
    .contractAddress!;
  blocks = [];
  expected = [];
  for (let i = 0; i < 2; i++) {
    const receipt = await (
      await wallet.sendTransaction({ to: contract, gasLimit: 1_500_000n })
    ).wait();
    expect(receipt!.status).toBe(1);
    blocks.push(receipt!.blockNumber);
    const raw = (await call(node.url, "eth_getTransactionReceipt", [receipt!.hash])).result as {
      logs: LogJson[];
    };
    for (const l of raw.logs) expected.push(asLog(l));
  }
  const looper = (await (await wallet.sendTransaction({ data: deployCode(LOOP_RUNTIME) })).wait())!
    .contractAddress!;
  const many = await (
    await wallet.sendTransaction({
      to: looper,
      data: `0x${MANY.toString(16).padStart(64, "0")}`,
      gasLimit: 2_000_000n,
    })
  ).wait();
  expect(many!.status).toBe(1);
  manyBlock = many!.blockNumber;
  const raw = (await call(node.url, "eth_getTransactionReceipt", [many!.hash])).result as {
    logs: LogJson[];
  };
  manyExpected = raw.logs.map(asLog);
}, 60_000);
afterAll(async () => {
  provider?.destroy();
  await node?.stop();
});

const hex = (n: number) => `0x${n.toString(16)}`;
const filter = () => ({ fromBlock: hex(blocks[0]!), toBlock: hex(blocks[1]!), topics: [BIG] });
const request = (id: unknown, method = "eth_getLogs", params: unknown[] = [filter()]) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params });
const answer = (id: unknown) => JSON.stringify({ jsonrpc: "2.0", id, result: expected });
const post = (body: string) =>
  `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

describe("eth_getLogs with a large answer", () => {
  it("answers the logs the receipts name, byte for byte, with the body's length stated", async () => {
    expect(expected).toHaveLength(6);
    for (const l of expected) expect(l.data).toBe(`0x${"00".repeat(DATA_BYTES)}`);
    const res = await send(node.url, request(1));
    expect(res.status).toBe(200);
    expect(res.text).toBe(answer(1));
    expect(res.text.length).toBeGreaterThan(500_000);
    expect(res.headers.get("content-length")).toBe(String(Buffer.byteLength(res.text)));
    // A string id beyond ASCII: its bytes are counted, not its characters.
    const res2 = await send(node.url, request("héllo"));
    expect(res2.text).toBe(answer("héllo"));
    expect(res2.headers.get("content-length")).toBe(String(Buffer.byteLength(res2.text)));
  });

  it("answers pipelined requests in order on one connection", async () => {
    const c = new RawClient(node.port);
    try {
      c.write(post(request(1)) + post(request(2, "eth_chainId", [])) + post(request(3)));
      const first = await c.answer();
      const second = await c.answer();
      const third = await c.answer();
      expect(first.body).toBe(answer(1));
      expect(JSON.parse(second.body)).toEqual({ jsonrpc: "2.0", id: 2, result: "0x21" });
      expect(third.body).toBe(answer(3));
    } finally {
      c.destroy();
    }
  });

  it("answers several connections asking at once, each its own answer whole", async () => {
    const clients = Array.from({ length: 4 }, () => new RawClient(node.port));
    try {
      for (const [i, c] of clients.entries()) c.write(post(request(i + 1)));
      const answers = await Promise.all(clients.map((c) => c.answer()));
      for (const [i, a] of answers.entries()) {
        expect(a.status).toBe(200);
        expect(a.body).toBe(answer(i + 1));
      }
    } finally {
      for (const c of clients) c.destroy();
    }
  });

  it("answers in a batch beside other members, in order", async () => {
    const res = await send(
      node.url,
      `[${request(1)},${request(2, "eth_chainId", [])},${request(3)}]`,
    );
    expect(res.text).toBe(
      `[${answer(1)},${JSON.stringify({ jsonrpc: "2.0", id: 2, result: "0x21" })},${answer(3)}]`,
    );
  });

  it("answers more logs than the main thread serves itself from a worker thread, the same text", async () => {
    expect(manyExpected).toHaveLength(MANY);
    const range = [{ fromBlock: hex(manyBlock), toBlock: hex(manyBlock) }];
    const want = JSON.stringify({ jsonrpc: "2.0", id: 8, result: manyExpected });
    const res = await send(node.url, request(8, "eth_getLogs", range));
    expect(res.text).toBe(want);
    expect(res.headers.get("content-length")).toBe(String(Buffer.byteLength(want)));
    // Again (the worker's caches warm), and by block hash.
    expect((await send(node.url, request(8, "eth_getLogs", range))).text).toBe(want);
    const byHash = [{ blockHash: manyExpected[0]!.blockHash }];
    expect((await send(node.url, request(8, "eth_getLogs", byHash))).text).toBe(want);
  });

  it("answers the same over WebSocket and through eth_getFilterLogs", async () => {
    const ws = await connect(node.url);
    try {
      expect((await ws.request("eth_getLogs", [filter()])).result).toEqual(expected);
    } finally {
      await ws.close();
    }
    const id = (await call(node.url, "eth_newFilter", [filter()])).result as string;
    const res = await send(node.url, request(5, "eth_getFilterLogs", [id]));
    expect(res.text).toBe(answer(5));
  });
});
