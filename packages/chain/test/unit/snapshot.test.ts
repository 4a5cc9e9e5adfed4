import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "@nodex/state";
import {
  type BlockHeader,
  bytesToHex,
  contractAddress,
  deriveDevAccounts,
  NETWORKS,
  nullLogger,
  type Receipt,
  signTransaction,
  type UnsignedTransaction,
} from "@nodex/types";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  Chain,
  type ChainDeps,
  ChainReader,
  mergedMiningRules,
  SYNTHETIC_SEALER,
} from "../../src/index.js";
import { executor, MINER } from "./fixtures.js";

const network = NETWORKS.regtest;
const [alice, bob] = deriveDevAccounts();
/** Past block 449, so that the headers carry fork-detection data read from their ancestors. */
const PIVOT = 455n;
const HEAD = 470n;

/** Runtime that stores BLOCKHASH(NUMBER − 20) at slot 0: it reads a header below the pivot. */
const BLOCKHASH_RUNTIME = new Uint8Array([0x60, 0x14, 0x43, 0x03, 0x40, 0x60, 0x00, 0x55, 0x00]);
function deployCode(runtime: Uint8Array): Uint8Array {
  const n = runtime.length;
  return new Uint8Array([
    ...[0x61, n >> 8, n & 0xff, 0x80, 0x60, 12, 0x60, 0, 0x39, 0x60, 0, 0xf3],
    ...runtime,
  ]);
}
const RECORDER = contractAddress(alice!.address, 0n);

const sign = (from: typeof alice, fields: Partial<UnsignedTransaction> & { nonce: bigint }) =>
  signTransaction(
    {
      gasPrice: 60_000_000n,
      gasLimit: 100_000n,
      to: null,
      value: 0n,
      data: new Uint8Array(),
      ...fields,
    },
    from!.privateKey,
    33,
  );

const dirs: string[] = [];
const dbs: Database[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) await db.close().catch(() => {});
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function newDatabase(): Promise<{ db: Database; path: string }> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-snapshot-test-"));
  dirs.push(dir);
  const path = join(dir, "db");
  const db = await Database.open(path);
  dbs.push(db);
  return { db, path };
}

const deps = (db: Database): ChainDeps => ({
  db,
  executor,
  logger: nullLogger,
  rules: mergedMiningRules(network),
  sealer: SYNTHETIC_SEALER,
});

/** The source chain, built once: a contract reading BLOCKHASH, transfers, 470 blocks. */
let source: Chain;
let sourceDir: string;
beforeAll(async () => {
  sourceDir = mkdtempSync(join(tmpdir(), "nodex-snapshot-source-"));
  const db = await Database.open(join(sourceDir, "db"));
  source = await Chain.open(network, deps(db));
  let aliceNonce = 0n;
  await source.mine(
    [sign(alice, { nonce: aliceNonce++, data: deployCode(BLOCKHASH_RUNTIME), gasLimit: 200_000n })],
    { coinbase: MINER },
  );
  for (let n = 2n; n <= HEAD; n++) {
    const txs =
      n % 7n === 0n
        ? [
            sign(bob, { nonce: n / 7n - 1n, to: alice!.address, value: n, gasLimit: 21_000n }),
            sign(alice, { nonce: aliceNonce++, to: RECORDER }),
          ]
        : [];
    await source.mine(txs, { coinbase: MINER });
  }
  expect(source.head.block.header.number).toBe(HEAD);
  return async () => {
    await db.close();
    rmSync(sourceDir, { recursive: true, force: true });
  };
}, 120_000);

async function sourceBlock(number: bigint) {
  const block = await source.getBlockByNumber(number);
  if (block === undefined) throw new Error(`no block ${number}`);
  return block;
}

async function headers(from: bigint, to: bigint): Promise<{ header: BlockHeader }[]> {
  const out: { header: BlockHeader }[] = [];
  for (let n = from; n <= to; n++) out.push({ header: (await sourceBlock(n)).block.header });
  return out;
}

/** The header chain to the pivot, the pivot's state copied in, ready for `installSnapshot`. */
async function preparedTarget(): Promise<{ chain: Chain; db: Database; path: string }> {
  const { db, path } = await newDatabase();
  const chain = await Chain.open(network, deps(db));
  for (let from = 1n; from <= PIVOT; from += 100n) {
    const to = from + 99n < PIVOT ? from + 99n : PIVOT;
    expect(await chain.storeHeaders(await headers(from, to))).toBeUndefined();
  }
  // The pivot's state, downloaded by hash from the source chain's items.
  const pivot = await sourceBlock(PIVOT);
  const sync = await chain.openStateSync(pivot.block.header.stateRoot);
  while (!sync.done) {
    const items = sync.take(64);
    const result = await sync.deliver(items, await source.stateItems(items));
    expect(result.ok).toBe(true);
  }
  return { chain, db, path };
}

async function receiptsOf(number: bigint): Promise<readonly Receipt[]> {
  const block = await sourceBlock(number);
  return (await source.getReceipts(block.hash)) ?? [];
}

describe("a chain installed from a snapshot", () => {
  it("stores checked headers past the head, then takes the pivot and imports what follows", async () => {
    const { chain, db, path } = await preparedTarget();
    expect(chain.head.block.header.number).toBe(0n);
    expect((await chain.headerTip()).number).toBe(PIVOT);
    expect(await chain.getBlockByNumber(5n)).toBeUndefined(); // past the head: no reader sees it
    expect((await chain.headerChainAt(5n))?.number).toBe(5n);

    const pivot = await sourceBlock(PIVOT);
    expect(await chain.installSnapshot(pivot.block, await receiptsOf(PIVOT))).toBeUndefined();
    expect(chain.head.hash).toEqual(pivot.hash);
    expect(chain.head.totalDifficulty).toBe(pivot.totalDifficulty);
    expect(chain.firstBlock).toEqual({
      number: PIVOT,
      hash: pivot.hash,
      anchored: false,
      snapshot: true,
      headersFrom: 0n,
    });
    // Headers back to genesis are canonical; blocks below the pivot are not held.
    expect(await chain.getCanonicalHash(0n)).toEqual((await sourceBlock(0n)).hash);
    expect(await chain.getCanonicalHash(100n)).toEqual((await sourceBlock(100n)).hash);
    expect(await chain.getBlockByNumber(100n)).toBeUndefined();
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    expect((await reader.resolve({ kind: "tag", tag: "earliest" }))?.hash).toEqual(pivot.hash);

    // Blocks after the pivot run on the downloaded state, BLOCKHASH reading headers below it.
    for (let n = PIVOT + 1n; n <= HEAD; n++) {
      const block = await sourceBlock(n);
      const res = await chain.importBlock(block.block);
      expect(res.result, `block ${n}: ${"reason" in res ? res.reason : ""}`).toBe("IMPORTED_BEST");
    }
    expect(chain.head.hash).toEqual(source.head.hash);
    expect(chain.head.totalDifficulty).toBe(source.head.totalDifficulty);
    const recorded = await (await chain.stateAt(chain.head.block.header)).getStorage(
      RECORDER,
      new Uint8Array(32),
    );
    expect(bytesToHex(recorded)).not.toBe("0x");

    // Opened again: still a snapshot chain of this network's genesis.
    await db.close();
    const again = await Database.open(path);
    dbs.push(again);
    const reopened = await Chain.open(network, deps(again));
    expect(reopened.firstBlock).toMatchObject({ number: PIVOT, snapshot: true, headersFrom: 0n });
    expect(reopened.head.hash).toEqual(source.head.hash);
  }, 60_000);

  it("keeps the pivot of a sync under way across a restart", async () => {
    const { db, path } = await newDatabase();
    const chain = await Chain.open(network, deps(db));
    expect(await chain.snapPivot()).toBeUndefined();
    await chain.saveSnapPivot(4_936n);
    expect(await chain.snapPivot()).toBe(4_936n);
    await db.close();
    const again = await Database.open(path);
    dbs.push(again);
    expect(await (await Chain.open(network, deps(again))).snapPivot()).toBe(4_936n);
  });

  it("refuses a header that breaks the rules, and stores nothing of its run", async () => {
    const { db } = await newDatabase();
    const chain = await Chain.open(network, deps(db));
    const run = await headers(1n, 10n);
    const bad = run.map((h, i) =>
      i === 6 ? { header: { ...h.header, difficulty: h.header.difficulty + 1n } } : h,
    );
    expect(await chain.storeHeaders(bad)).toMatch(/^header 7 0x[0-9a-f]{64}: difficulty/);
    expect((await chain.headerTip()).number).toBe(0n);
    expect(await chain.headerChainAt(3n)).toBeUndefined();
    // A run that does not continue the tip.
    expect(await chain.storeHeaders(await headers(3n, 5n))).toMatch(
      /^header 3 0x[0-9a-f]{64} is not the child of header 0/,
    );
    expect(await chain.storeHeaders(run)).toBeUndefined();
    expect((await chain.headerTip()).number).toBe(10n);
  });

  it("refuses a pivot whose receipts, body or state do not match its header", async () => {
    const { chain, db } = await preparedTarget();
    const pivot = await sourceBlock(PIVOT);
    const receipts = await receiptsOf(PIVOT);
    const withTx = await sourceBlock(PIVOT - (PIVOT % 7n));
    // A pivot block with transactions is needed for the receipt checks: 455 is a multiple of 7.
    expect(withTx.hash).toEqual(pivot.hash);
    expect(receipts.length).toBe(2);
    const changed = receipts.map((r, i) =>
      i === 1 ? { ...r, cumulativeGasUsed: r.cumulativeGasUsed + 1n } : r,
    );
    expect(await chain.installSnapshot(pivot.block, changed)).toMatch(/receipts root/);
    expect(await chain.installSnapshot({ ...pivot.block, transactions: [] }, receipts)).toMatch(
      /transactions root/,
    );
    const other = await sourceBlock(PIVOT - 1n);
    expect(await chain.installSnapshot(other.block, await receiptsOf(PIVOT - 1n))).toMatch(
      /state of block 454 is not in the database/,
    );
    expect(chain.head.block.header.number).toBe(0n);
    expect(chain.firstBlock.snapshot).toBe(false);
    void db;
  });
});
