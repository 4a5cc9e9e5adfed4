import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployCode } from "../helpers/bytecode.js";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// Heavy requests (a trace of a transaction of 2.8M gas, eth_getLogs of 10,000 logs) run on the
// node's worker threads: cheap requests sent meanwhile are answered before them. And they
// answer what the main thread answers (`--rpc-worker-threads 0`), to the byte.

const MODULES = ["--rpc-modules", "eth,net,web3,rpc,evm,debug,trace"];
/** Runtime: n = calldata[0]; while (n != 0) n -= 1; stop. 40 gas and 10 steps a round. */
const LOOP = "0x6000355b8015601057600190036003565b00";
/** Runtime: n = calldata[0]; while (n != 0) { mstore(0, n); log1(0, 32, 0x2a); n -= 1 }; stop. */
const EMIT = "0x6000355b8015601b5780600052602a60206000a1600190036003565b00";
const LOOP_ROUNDS = 70_000;
const LOGS_PER_TX = 2_000;
const LOG_TXS = 5;

let node: RunningNode;
let datadir: string;
let from: string;
let loopTx: string;
let loopBlock: string;
let logBlocks: string[];

async function result<T>(method: string, params: unknown[] = []): Promise<T> {
  const res = await call(node.url, method, params);
  if (res.error !== undefined) throw new Error(`${method}: ${JSON.stringify(res.error)}`);
  return res.result as T;
}

interface Receipt {
  status: string;
  gasUsed: string;
  blockNumber: string;
  contractAddress: string | null;
}

async function send(tx: Record<string, string>): Promise<{ hash: string; receipt: Receipt }> {
  const hash = await result<string>("eth_sendTransaction", [{ from, ...tx }]);
  const receipt = await result<Receipt>("eth_getTransactionReceipt", [hash]);
  expect(receipt.status).toBe("0x1");
  return { hash, receipt };
}

const word = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

async function deploy(runtime: string): Promise<string> {
  const { receipt } = await send({ data: deployCode(runtime), gas: "0x100000" });
  return receipt.contractAddress!;
}

/**
 * Sends `eth_blockNumber` one after another while `heavy` runs; the number of answers that
 * came before `heavy`'s.
 */
async function cheapAnswersDuring(heavy: Promise<unknown>): Promise<number> {
  let done = false;
  const settled = heavy.finally(() => {
    done = true;
  });
  let answered = 0;
  while (!done) {
    const res = await call(node.url, "eth_blockNumber");
    expect(res.result).toMatch(/^0x[0-9a-f]+$/);
    if (!done) answered++;
  }
  await settled;
  return answered;
}

beforeAll(async () => {
  datadir = mkdtempSync(join(tmpdir(), "nodex-e2e-"));
  // Regtest serves heavy requests on the main thread unless told otherwise.
  node = await startNode({ args: [...MODULES, "--rpc-worker-threads", "2"], datadir });
  [from] = await result<string[]>("eth_accounts");
  const loop = await deploy(LOOP);
  const sent = await send({ to: loop, data: word(LOOP_ROUNDS), gas: "0x2dc6c0" });
  loopTx = sent.hash;
  loopBlock = sent.receipt.blockNumber;
  // The trace must take long next to a loopback round trip: a few million gas.
  expect(Number(sent.receipt.gasUsed)).toBeGreaterThan(2_500_000);
  const emit = await deploy(EMIT);
  logBlocks = [];
  for (let i = 0; i < LOG_TXS; i++) {
    const { receipt } = await send({ to: emit, data: word(LOGS_PER_TX), gas: "0x2dc6c0" });
    logBlocks.push(receipt.blockNumber);
  }
}, 60_000);

afterAll(async () => {
  await node?.stop();
  if (datadir !== undefined) rmSync(datadir, { recursive: true, force: true });
});

describe("heavy requests on worker threads", () => {
  it("answers eth_blockNumber while a trace of 2.8M gas runs", async () => {
    const trace = result<{ gasUsed: string; type: string }>("debug_traceTransaction", [
      loopTx,
      { tracer: "callTracer" },
    ]);
    const answered = await cheapAnswersDuring(trace);
    const frame = await trace;
    expect(frame.type).toBe("CALL");
    expect(Number(frame.gasUsed)).toBeGreaterThan(2_500_000);
    expect(answered).toBeGreaterThanOrEqual(5);
  }, 60_000);

  it("answers eth_blockNumber while two queries of 10,000 logs run", async () => {
    const query = () =>
      result<unknown[]>("eth_getLogs", [
        { fromBlock: logBlocks[0], toBlock: logBlocks[logBlocks.length - 1] },
      ]);
    const both = Promise.all([query(), query()]);
    const answered = await cheapAnswersDuring(both);
    const [a, b] = await both;
    expect(a).toHaveLength(LOGS_PER_TX * LOG_TXS);
    expect(b).toEqual(a);
    expect(answered).toBeGreaterThanOrEqual(5);
  }, 60_000);

  it("answers what the main thread answers, to the byte", async () => {
    const requests: [string, unknown[]][] = [
      ["debug_traceTransaction", [loopTx, { tracer: "callTracer" }]],
      ["debug_traceTransaction", [loopTx, { tracer: "prestateTracer", diffMode: true }]],
      ["debug_traceBlockByNumber", [logBlocks[0], { tracer: "callTracer", withLog: true }]],
      ["debug_traceBlockByNumber", ["0xfffff", {}]],
      ["trace_transaction", [loopTx]],
      ["trace_block", [loopBlock]],
      ["trace_filter", [{ fromBlock: "0x0", toBlock: "latest", count: 3 }]],
      ["eth_getLogs", [{ fromBlock: "earliest", toBlock: "latest" }]],
      ["eth_getLogs", [{ fromBlock: "latest" }]],
      ["eth_getLogs", [{ fromBlock: "0xfffff" }]],
    ];
    const answers = async () => {
      const out: string[] = [];
      for (const [method, params] of requests) {
        const res = await fetch(node.url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
        });
        out.push(await res.text());
      }
      // eth_getFilterLogs of a log filter over the same range.
      const filter = await result<string>("eth_newFilter", [{ fromBlock: "earliest" }]);
      const res = await call(node.url, "eth_getFilterLogs", [filter]);
      out.push(JSON.stringify(res.result));
      return out;
    };
    const onWorkers = await answers();
    // The same database, served on the main thread.
    await node.stop();
    node = await startNode({ args: [...MODULES, "--rpc-worker-threads", "0"], datadir });
    const onMain = await answers();
    expect(onWorkers).toEqual(onMain);
    expect(onMain[3]).toContain('"code":-32602');
    expect(onMain[9]).toContain('"code":-32602');
    expect(JSON.parse(onMain[10]!)).toHaveLength(LOGS_PER_TX * LOG_TXS);
  }, 60_000);
});
