import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Bucket, Database } from "@nodex/state";
import {
  type Address,
  bytesToHex,
  clearSenderCache,
  decodeTransaction,
  deriveDevAccounts,
  nullLogger,
  selectSignatureRecovery,
  signTransaction,
} from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BlockStore } from "../../src/blockStore.js";
import { Chain, ChainReader } from "../../src/index.js";
import { executor, MINER, network } from "./fixtures.js";

// Blocks read back from the database carry the senders stored beside them: no signature is
// recovered on a read, however the block is reached.

/** Every public-key recovery of secp256k1 goes through here: counted, and refused on demand. */
const recovery = vi.hoisted(() => ({ calls: 0, forbidden: false }));
vi.mock("@noble/curves/secp256k1.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("@noble/curves/secp256k1.js")>();
  // The library freezes its classes: a subclass is the place to intercept recovery.
  class Signature extends original.secp256k1.Signature {
    override recoverPublicKey(messageHash: Uint8Array) {
      recovery.calls++;
      if (recovery.forbidden) throw new Error("signature recovery on a read");
      return super.recoverPublicKey(messageHash);
    }
  }
  return { ...original, secp256k1: { ...original.secp256k1, Signature } };
});

// Recovery counted above is noble's: the native backend is left out of this file.
selectSignatureRecovery("noble");

const [alice, bob, carol] = deriveDevAccounts();
const TO = "0x000000000000000000000000000000000000beef";

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-block-store-"));
  db = await Database.open(join(dir, "db"));
});
afterEach(async () => {
  recovery.calls = 0;
  recovery.forbidden = false;
  await db.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

const open = () => Chain.open(network, { db, executor, logger: nullLogger });
const transfer = (from: NonNullable<typeof alice>, nonce: bigint) =>
  signTransaction(
    {
      nonce,
      gasPrice: 0n,
      gasLimit: 21_000n,
      to: Uint8Array.from(Buffer.from(TO.slice(2), "hex")) as Address,
      value: 1n + nonce,
      data: new Uint8Array(),
    },
    from.privateKey,
    33,
  );

/** Two blocks of transfers from three senders, then the database closed and opened again. */
async function minedThenReopened() {
  const chain = await open();
  const first = await chain.mine([transfer(alice!, 0n), transfer(bob!, 0n), transfer(carol!, 0n)], {
    coinbase: MINER,
  });
  const second = await chain.mine([transfer(bob!, 1n), transfer(alice!, 1n)], {
    coinbase: MINER,
  });
  expect(first.rejected).toEqual([]);
  expect(second.rejected).toEqual([]);
  await db.close();
  db = await Database.open(join(dir, "db"));
  return { first, second };
}

/** From now on every public-key recovery throws; counts from zero. */
function forbidRecovery() {
  recovery.calls = 0;
  recovery.forbidden = true;
}

const senders = (block: { block: { transactions: readonly { from: Uint8Array }[] } }) =>
  block.block.transactions.map((tx) => bytesToHex(tx.from));
const hex = (account: NonNullable<typeof alice>) => bytesToHex(account.address);

describe("reading stored blocks", () => {
  it("recovers no signature: blocks by hash and number, receipts, transactions by hash", async () => {
    const { first, second } = await minedThenReopened();
    forbidRecovery();
    // A fresh chain on the same database: nothing is cached, every block comes from disk.
    const chain = await open();
    expect(chain.head.block.header.number).toBe(2n);
    expect(senders(chain.head)).toEqual([hex(bob!), hex(alice!)]);

    const byHash = await chain.getBlockByHash(first.hash);
    expect(senders(byHash!)).toEqual([hex(alice!), hex(bob!), hex(carol!)]);
    const byNumber = await chain.getBlockByNumber(2n);
    expect(bytesToHex(byNumber!.hash)).toBe(bytesToHex(second.hash));
    expect(senders(byNumber!)).toEqual([hex(bob!), hex(alice!)]);
    expect(byNumber!.block.transactions.map((tx) => tx.nonce)).toEqual([1n, 1n]);

    expect((await chain.getReceipts(first.hash))?.map((r) => r.cumulativeGasUsed)).toEqual([
      21_000n,
      42_000n,
      63_000n,
    ]);
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    const carolTx = first.block.transactions[2]!;
    const found = await reader.receipt(carolTx.hash);
    expect(found?.index).toBe(2);
    expect(bytesToHex(found!.tx.from)).toBe(hex(carol!));
    expect(found?.receipt.status).toBe(1);
    expect(found?.gasUsed).toBe(21_000n);
    const byTxHash = await reader.transaction(second.block.transactions[1]!.hash);
    expect(bytesToHex(byTxHash!.tx.from)).toBe(hex(alice!));
    expect(bytesToHex(byTxHash!.tx.hash)).toBe(bytesToHex(second.block.transactions[1]!.hash));

    expect(recovery.calls).toBe(0);
  });

  it("intercepts every recovery: decoding without a stored sender recovers once, then remembers; refused recovery fails", () => {
    clearSenderCache();
    const raw = transfer(carol!, 0n).raw;
    recovery.calls = 0;
    expect(bytesToHex(decodeTransaction(raw).from)).toBe(hex(carol!));
    expect(recovery.calls).toBe(1);
    forbidRecovery();
    // The sender recovered a moment ago comes from the cache of recovered senders.
    expect(bytesToHex(decodeTransaction(raw).from)).toBe(hex(carol!));
    expect(bytesToHex(decodeTransaction(raw, carol!.address).from)).toBe(hex(carol!));
    // Another transaction is recovered, and the refusal shows.
    expect(() => decodeTransaction(transfer(carol!, 1n).raw)).toThrow(
      /invalid transaction signature/,
    );
    expect(recovery.calls).toBe(1);
  });

  it("recovers the senders of a block stored without them, and only of that block", async () => {
    const { first, second } = await minedThenReopened();
    await db.write([{ type: "del", bucket: Bucket.SENDERS, key: first.hash }]);
    clearSenderCache();
    recovery.calls = 0;
    const chain = await open();
    await chain.getBlockByHash(second.hash);
    expect(recovery.calls).toBe(0);
    const old = await chain.getBlockByNumber(1n);
    expect(senders(old!)).toEqual([hex(alice!), hex(bob!), hex(carol!)]);
    expect(recovery.calls).toBe(3);
  });
});

describe("the log record cache", () => {
  it("counts a block without logs at what its entry takes, so its bytes bound how many it keeps", async () => {
    const store = new BlockStore(db, { logRecordBytes: 32 * 1024 });
    const reads = vi.spyOn(db, "get");
    for (let n = 0n; n < 5_000n; n++) expect(await store.logRecord(n)).toBeUndefined();
    expect(reads).toHaveBeenCalledTimes(5_000);
    // 32 KiB holds a few hundred such entries, not 5,000: most are read again.
    reads.mockClear();
    for (let n = 0n; n < 5_000n; n++) expect(await store.logRecord(n)).toBeUndefined();
    expect(reads.mock.calls.length).toBeGreaterThan(4_500);
    // The most recently read are still kept.
    reads.mockClear();
    for (let n = 4_900n; n < 5_000n; n++) await store.logRecord(n);
    expect(reads).not.toHaveBeenCalled();
  });
});
