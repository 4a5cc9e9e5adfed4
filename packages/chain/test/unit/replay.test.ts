import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CallTracer, StructLogger } from "@nodex/evm";
import { Database } from "@nodex/state";
import {
  deriveDevAccounts,
  NETWORKS,
  nullLogger,
  signTransaction,
  type UnsignedTransaction,
} from "@nodex/types";
import { afterEach, describe, expect, it } from "vitest";
import { Chain, ChainError, ChainErrorCode, ChainReader } from "../../src/index.js";
import { executor, MINER } from "./fixtures.js";

const [alice, bob] = deriveDevAccounts();
const dirs: string[] = [];
const dbs: Database[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) await db.close().catch(() => {});
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function openChain(stateWindow?: number): Promise<Chain> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-replay-test-"));
  dirs.push(dir);
  const db = await Database.open(join(dir, "db"));
  dbs.push(db);
  return Chain.open(NETWORKS.regtest, {
    db,
    executor,
    logger: nullLogger,
    ...(stateWindow === undefined ? {} : { stateWindow }),
  });
}

const pay = (nonce: bigint, fields: Partial<UnsignedTransaction> = {}) =>
  signTransaction(
    {
      nonce,
      gasPrice: 1n,
      gasLimit: 100_000n,
      to: bob!.address,
      value: 5n,
      data: new Uint8Array(),
      ...fields,
    },
    alice!.privateKey,
    33,
  );

describe("ChainReader.traceTransaction and traceBlock", () => {
  it("run a transaction again after the ones before it in its block, as the block ran", async () => {
    const chain = await openChain();
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    const txs = [pay(0n), pay(1n, { value: 7n }), pay(2n)];
    const mined = await chain.mine(txs, { coinbase: MINER, timestamp: 1_001n });
    const receipts = await chain.getReceipts(mined.hash);

    const traced = await reader.traceTransaction(txs[1]!.hash, () => new CallTracer());
    expect(traced?.found.index).toBe(1);
    const trace = traced!.tracer.result();
    expect(trace.root.value).toBe(7n);
    expect(trace.gasUsed).toBe(receipts![1]!.cumulativeGasUsed - receipts![0]!.cumulativeGasUsed);

    const all = await reader.traceBlock(mined, () => new StructLogger());
    expect(all.map((t) => t.index)).toEqual([0, 1, 2]);
    for (const t of all) expect(t.tracer.result().structLogs).toEqual([]); // plain transfers
    expect(await reader.traceTransaction(new Uint8Array(32), () => new CallTracer())).toBeNull();
    // the chain is unchanged
    expect(chain.head.hash).toEqual(mined.hash);
  });

  it("refuse a block whose parent's state is no longer kept", async () => {
    const chain = await openChain(2);
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    const first = pay(0n);
    await chain.mine([first], { coinbase: MINER, timestamp: 1_001n });
    for (let i = 1n; i <= 6n; i++)
      await chain.mine([pay(i)], { coinbase: MINER, timestamp: 1_001n + i });
    const err = await reader
      .traceTransaction(first.hash, () => new CallTracer())
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChainError);
    expect((err as ChainError).code).toBe(ChainErrorCode.STATE_MISSING);
  });
});
