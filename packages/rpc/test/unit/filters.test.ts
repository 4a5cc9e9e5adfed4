import type { HeadChange, StoredBlock } from "@nodex/chain";
import type { Address, Hash32, Receipt, SignedTransaction } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { FilterManager, type LogChange } from "../../src/filters.js";
import type { ChainReaderService, NodeEvents } from "../../src/services.js";

/** Events fired by hand, a clock moved by hand. */
function harness(
  opts: { maxFilters?: number; maxChanges?: number } = {},
  receipts: () => Receipt[] = () => [],
) {
  const heads = new Set<(change: HeadChange) => void>();
  const txs = new Set<(tx: SignedTransaction) => void>();
  const events: NodeEvents = {
    onHeadChange: (l) => {
      heads.add(l);
      return () => heads.delete(l);
    },
    onNewTransaction: (l) => {
      txs.add(l);
      return () => txs.delete(l);
    },
  };
  let now = 1_000_000;
  const reader = { getLogs: async () => [] } as unknown as ChainReaderService;
  const filters = new FilterManager(reader, events, { timeoutMs: 60_000, now: () => now, ...opts });
  let n = 0;
  const block = (): StoredBlock => {
    const hash = new Uint8Array(32).fill(++n);
    return {
      hash,
      totalDifficulty: 1n,
      block: { header: {}, transactions: [], uncles: [] },
    } as unknown as StoredBlock;
  };
  const newHead = (...added: StoredBlock[]) => {
    const change: HeadChange = {
      head: added.at(-1)!,
      removed: [],
      added,
      receipts: async () => receipts(),
    };
    for (const l of heads) l(change);
  };
  const newTx = (hash: number) => {
    for (const l of txs) l({ hash: new Uint8Array(32).fill(hash) } as SignedTransaction);
  };
  return {
    filters,
    block,
    newHead,
    newTx,
    advance: (ms: number) => {
      now += ms;
    },
    listeners: () => heads.size + txs.size,
  };
}

describe("FilterManager", () => {
  it("removes a filter nobody polled for the timeout; polling keeps it", async () => {
    const { filters, advance } = harness();
    const kept = filters.newBlockFilter();
    const dropped = filters.newBlockFilter();
    advance(59_000);
    await filters.changes(kept);
    advance(2_000);
    expect((await filters.changes(kept)).changes).toEqual([]);
    await expect(filters.changes(dropped)).rejects.toMatchObject({
      code: -32000,
      message: "filter not found",
    });
    expect(filters.uninstall(dropped)).toBe(false);
  });

  it("keeps at most maxChanges between polls, dropping the oldest", async () => {
    const { filters, block, newHead } = harness({ maxChanges: 3 });
    const id = filters.newBlockFilter();
    const blocks = [block(), block(), block(), block(), block()];
    for (const b of blocks) newHead(b);
    const { changes } = await filters.changes(id);
    expect(changes).toEqual(blocks.slice(2).map((b) => b.hash));
  });

  it("refuses a filter past maxFilters with -32011; an uninstall makes room", () => {
    const { filters } = harness({ maxFilters: 2 });
    const first = filters.newBlockFilter();
    filters.newPendingTransactionFilter();
    expect(() => filters.newBlockFilter()).toThrow(
      expect.objectContaining({ code: -32011, message: expect.stringMatching(/at most 2/) }),
    );
    expect(filters.uninstall(first)).toBe(true);
    expect(filters.newBlockFilter()).toBeTypeOf("bigint");
  });

  it("feeds each kind its own events only", async () => {
    const { filters, block, newHead, newTx } = harness();
    const blocks = filters.newBlockFilter();
    const txs = filters.newPendingTransactionFilter();
    const b = block();
    newHead(b);
    newTx(7);
    expect((await filters.changes(blocks)).changes).toEqual([b.hash]);
    expect((await filters.changes(txs)).changes).toEqual([new Uint8Array(32).fill(7)]);
  });

  it("stops following the node's events when closed", () => {
    const { filters, listeners } = harness();
    expect(listeners()).toBe(2);
    filters.close();
    expect(listeners()).toBe(0);
    expect(filters.size).toBe(0);
  });

  it("keeps a log's place in its block, not the block, while the log waits for a poll", async () => {
    const address = new Uint8Array(20).fill(0xaa) as Address;
    const topic = new Uint8Array(32).fill(0xbb) as Hash32;
    const receipt = {
      status: 1,
      cumulativeGasUsed: 21_000n,
      logsBloom: new Uint8Array(256),
      logs: [{ address, topics: [topic], data: new Uint8Array([1]) }],
    } as Receipt;
    const { filters, block, newHead } = harness({}, () => [receipt]);
    const id = filters.newLogFilter({
      range: { from: { kind: "tag", tag: "earliest" }, to: { kind: "tag", tag: "latest" } },
      addresses: [address],
      topics: [],
    });
    const b = block();
    const tx = { hash: new Uint8Array(32).fill(0xcc) } as SignedTransaction;
    (b.block as { transactions: SignedTransaction[] }).transactions.push(tx);
    (b.block as { header: { number: bigint } }).header.number = 5n;
    newHead(b);
    const taken = await filters.changes(id);
    expect(taken.kind).toBe("logs");
    const [change] = taken.changes as readonly LogChange[];
    expect(change).toEqual({
      found: {
        log: receipt.logs[0],
        blockHash: b.hash,
        blockNumber: 5n,
        transactionHash: tx.hash,
        transactionIndex: 0,
        logIndex: 0,
      },
      removed: false,
    });
    expect(change!.found.block).toBeUndefined();
  });
});
