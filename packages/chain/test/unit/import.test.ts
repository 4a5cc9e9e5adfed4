import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "@nodex/state";
import {
  type Address,
  type Block,
  bytesToHex,
  deriveDevAccounts,
  headerHash,
  hexToBytes,
  nullLogger,
  signTransaction,
  unclesHash,
} from "@nodex/types";
import { describe, expect, it, onTestFinished } from "vitest";
import { Chain, type ConsensusRules, DEV_ACCOUNT_BALANCE } from "../../src/index.js";
import { chainFactory, executor, MINER, network, withHeader } from "./fixtures.js";

const [alice, bob, carol] = deriveDevAccounts();
const makeChain = chainFactory();
const newChain = (rules?: ConsensusRules) => makeChain(rules ? { rules } : {});

const pay = (from: typeof alice, nonce: bigint, to: Address, value: bigint) =>
  signTransaction(
    { nonce, gasPrice: 1n, gasLimit: 21_000n, to, value, data: new Uint8Array() },
    from!.privateKey,
    33,
  );

/** Mines `count` blocks on `source`, each paying `value` from alice to `to`, and returns them. */
async function mineBlocks(
  source: Chain,
  count: number,
  to: Address,
  value: bigint,
  time = 1_000n,
): Promise<Block[]> {
  const blocks: Block[] = [];
  for (let i = 0; i < count; i++) {
    const nonce = source.head.block.header.number;
    const mined = await source.mine([pay(alice, nonce, to, value)], {
      coinbase: MINER,
      timestamp: time + BigInt(i),
    });
    blocks.push(mined.block);
  }
  return blocks;
}

describe("Chain.importBlock", () => {
  it("imports blocks built elsewhere and ends on the same head and state", async () => {
    const source = await newChain();
    const blocks = await mineBlocks(source, 3, bob!.address, 5n);
    const target = await newChain();
    for (const block of blocks)
      expect((await target.importBlock(block)).result).toBe("IMPORTED_BEST");
    expect(bytesToHex(target.head.hash)).toBe(bytesToHex(source.head.hash));
    expect(target.head.totalDifficulty).toBe(source.head.totalDifficulty);
    const state = await target.stateAt(target.head.block.header);
    expect(await state.getBalance(bob!.address)).toBe(DEV_ACCOUNT_BALANCE + 15n);
    // Fees go to the block's miner.
    expect(await state.getBalance(MINER)).toBe(3n * 21_000n);
    const receipts = await target.getReceipts(target.head.hash);
    expect(receipts?.[0]?.status).toBe(1);
    expect((await target.importBlock(blocks[1]!)).result).toBe("EXIST");
  });

  it("answers NO_PARENT for a block whose parent it does not have", async () => {
    const source = await newChain();
    const blocks = await mineBlocks(source, 2, bob!.address, 1n);
    const target = await newChain();
    const res = await target.importBlock(blocks[1]!);
    expect(res.result).toBe("NO_PARENT");
    expect(target.head.block.header.number).toBe(0n);
  });

  it.each([
    ["a wrong state root", { stateRoot: new Uint8Array(32).fill(1) }, "state root does not match"],
    ["a wrong gas used", { gasUsed: 21_001n }, "gas used 21001, the transactions use 21000"],
    ["wrong paid fees", { paidFees: 1n }, "paid fees 1, the transactions pay 21000"],
    ["a wrong transactions root", { transactionsRoot: new Uint8Array(32) }, "transactions root"],
    ["a wrong receipts root", { receiptsRoot: new Uint8Array(32) }, "receipts root"],
    ["a wrong bloom", { logsBloom: new Uint8Array(256).fill(0xff) }, "logs bloom"],
    ["a timestamp not after its parent's", { timestamp: 0n }, "is not after its parent's 0"],
    ["a wrong number", { number: 5n }, "number 5 does not follow its parent's 0"],
    ["a wrong difficulty", { difficulty: 2n }, "difficulty 2 is not the expected 1"],
    ["a gas limit jump", { gasLimit: 20_000_000n }, "moves more than 1/1024"],
    ["a minimum gas price jump", { minimumGasPrice: 100n }, "moves more than 1%"],
    ["an uncle count without uncles", { uncleCount: 1 }, "uncle count 1 does not match"],
  ])("refuses a block with %s, and keeps its head", async (_what, change, reason) => {
    const source = await newChain();
    const [block] = await mineBlocks(source, 1, bob!.address, 1n);
    const target = await newChain();
    const res = await target.importBlock(withHeader(block!, change));
    expect(res.result).toBe("INVALID_BLOCK");
    expect(res.result === "INVALID_BLOCK" && res.reason).toContain(reason);
    expect(target.head.block.header.number).toBe(0n);
    // The untouched block still imports.
    expect((await target.importBlock(block!)).result).toBe("IMPORTED_BEST");
  });

  it("refuses a block with a transaction that cannot run", async () => {
    const source = await newChain();
    const [block] = await mineBlocks(source, 1, bob!.address, 1n);
    const broken = { ...block!, transactions: [pay(alice, 7n, bob!.address, 1n)] };
    const target = await newChain();
    const res = await target.importBlock(broken);
    // Its transactions root no longer matches, which is checked first.
    expect(res.result).toBe("INVALID_BLOCK");
  });

  it("refuses a block whose seal the rules refuse, saying why", async () => {
    const source = await newChain();
    const [block] = await mineBlocks(source, 1, bob!.address, 1n);
    const target = await newChain({
      difficulty: (parent) => parent.difficulty,
      checkSeal: (header) =>
        header.bitcoinMergedMiningHeader.length === 80 ? undefined : "no Bitcoin header",
    });
    const res = await target.importBlock(block!);
    expect(res).toEqual({
      result: "INVALID_BLOCK",
      reason: expect.stringContaining("invalid merged-mining proof: no Bitcoin header"),
    });
  });
});

describe("Chain.buildTemplate", () => {
  it("builds a block on the head without writing it; sealed, it imports as the new head", async () => {
    const chain = await newChain();
    await mineBlocks(chain, 1, bob!.address, 1n);
    const template = await chain.buildTemplate(
      [pay(alice, 1n, bob!.address, 2n), pay(alice, 9n, bob!.address, 3n)],
      { coinbase: MINER, timestamp: 5_000n },
    );
    expect(template.block.header.number).toBe(2n);
    expect(bytesToHex(template.parentHash)).toBe(bytesToHex(chain.head.hash));
    expect(template.block.transactions).toHaveLength(1);
    expect(template.rejected[0]?.error.message).toMatch(/^nonce too high/);
    expect(chain.head.block.header.number).toBe(1n);
    // The head's state is untouched: a block mined now sees nonce 1 still free.
    const sealed = {
      ...template.block,
      header: { ...template.block.header, bitcoinMergedMiningHeader: new Uint8Array(80) },
    };
    expect((await chain.importBlock(sealed)).result).toBe("IMPORTED_BEST");
    const state = await chain.stateAt(chain.head.block.header);
    expect(await state.getBalance(bob!.address)).toBe(DEV_ACCOUNT_BALANCE + 3n);
  });

  it("refuses to write a mined block whose seal its own rules refuse", async () => {
    const chain = await newChain({
      difficulty: (parent) => parent.difficulty,
      checkSeal: () => "never valid",
    });
    await expect(
      chain.mine([pay(alice, 0n, bob!.address, 1n)], { coinbase: MINER }),
    ).rejects.toThrow("the sealer made an invalid merged-mining proof: never valid");
    expect(chain.head.block.header.number).toBe(0n);
    // Nothing of the refused block stayed: the head's state is as it was.
    const state = await chain.stateAt(chain.head.block.header);
    expect(await state.getNonce(alice!.address)).toBe(0n);
    expect(await chain.getBlockByNumber(1n)).toBeUndefined();
  });
});

describe("blocks without proofs", () => {
  it("go on past block 449, where fork-detection data begins", async () => {
    const chain = await newChain();
    for (let i = 0n; i < 452n; i++)
      await chain.mine([], { coinbase: MINER, timestamp: 1_000n + i });
    expect(chain.head.block.header.number).toBe(452n);
    const hfmm = await chain.hashForMergedMining(chain.head.block.header);
    expect(new DataView(hfmm.buffer, hfmm.byteOffset).getUint32(28)).toBe(452);
  });
});

describe("Chain.onHeadChange", () => {
  it("tells listeners of each new head: built, imported, reorganized, rewound; not of side blocks", async () => {
    const a = await newChain();
    const c = await newChain();
    const branchA = await mineBlocks(a, 1, bob!.address, 1n, 1_000n);
    const branchC = await mineBlocks(c, 2, carol!.address, 1n, 2_000n);
    const node = await newChain();
    const heads: bigint[] = [];
    const stop = node.onHeadChange(({ head }) => heads.push(head.block.header.number));
    await node.importBlock(branchA[0]!);
    await node.importBlock(branchC[0]!); // a side block: no new head
    await node.importBlock(branchC[1]!); // reorganization
    await node.mine([], { coinbase: MINER, timestamp: 3_000n });
    await node.rewindTo(1n);
    stop();
    await node.mine([], { coinbase: MINER, timestamp: 3_001n });
    expect(heads).toEqual([1n, 2n, 3n, 1n]);
  });

  it("carries the blocks that left and joined the canonical chain, in chain order", async () => {
    const a = await newChain();
    const c = await newChain();
    const branchA = await mineBlocks(a, 2, bob!.address, 1n, 1_000n);
    const branchC = await mineBlocks(c, 4, carol!.address, 1n, 2_000n);
    const node = await newChain();
    const changes: { removed: string[]; added: string[]; head: string }[] = [];
    node.onHeadChange((change) =>
      changes.push({
        head: bytesToHex(change.head.hash),
        removed: change.removed.map((b) => bytesToHex(b.hash)),
        added: change.added.map((b) => bytesToHex(b.hash)),
      }),
    );
    for (const block of [...branchA, ...branchC]) await node.importBlock(block);
    const hashes = (blocks: Block[]) => blocks.map((b) => bytesToHex(headerHash(b.header)));
    const [a1, a2] = hashes(branchA);
    // Two blocks on the empty chain: each joins alone.
    expect(changes.slice(0, 2)).toEqual([
      { head: a1, removed: [], added: [a1] },
      { head: a2, removed: [], added: [a2] },
    ]);
    // Then the heavier branch: one change takes out A's blocks, lowest first, and puts in the
    // other branch from the common ancestor's child up; any later blocks join one by one.
    const reorg = changes.slice(2);
    expect(reorg[0]!.removed).toEqual([a1, a2]);
    expect(reorg.slice(1).every((c) => c.removed.length === 0)).toBe(true);
    expect(reorg.flatMap((c) => c.added)).toEqual(hashes(branchC));
    expect(reorg.at(-1)!.head).toBe(hashes(branchC).at(-1));
    expect(bytesToHex(node.head.hash)).toBe(hashes(branchC).at(-1));
  });

  it("a rewind carries the blocks it removed, lowest first, and none added", async () => {
    const node = await newChain();
    const mined = [];
    for (let i = 0n; i < 3n; i++)
      mined.push(await node.mine([], { coinbase: MINER, timestamp: 1_000n + i }));
    const changes: { removed: bigint[]; added: bigint[] }[] = [];
    node.onHeadChange((change) =>
      changes.push({
        removed: change.removed.map((b) => b.block.header.number),
        added: change.added.map((b) => b.block.header.number),
      }),
    );
    await node.rewindTo(1n);
    expect(changes).toEqual([{ removed: [2n, 3n], added: [] }]);
  });
});

describe("Chain.rewindTo", () => {
  it("makes an earlier block the head and deletes the blocks above, indexes and all", async () => {
    const chain = await newChain();
    const blocks = await mineBlocks(chain, 4, bob!.address, 10n, 1_000n);
    const laterTx = blocks[3]!.transactions[0]!.hash;
    const rewound = await chain.rewindTo(2n);
    expect(rewound.block.header.number).toBe(2n);
    expect(chain.head.block.header.number).toBe(2n);
    expect(await chain.getBlockByNumber(3n)).toBeUndefined();
    expect(await chain.getBlockByHash(headerHash(blocks[3]!.header))).toBeUndefined();
    expect(await chain.getTransactionLocation(laterTx)).toBeUndefined();
    const state = await chain.stateAt(chain.head.block.header);
    expect(await state.getBalance(bob!.address)).toBe(DEV_ACCOUNT_BALANCE + 20n);
    // The chain goes on from there: nonce 2 is free again.
    const mined = await chain.mine([pay(alice, 2n, carol!.address, 1n)], { coinbase: MINER });
    expect(mined.block.header.number).toBe(3n);
    expect(mined.rejected).toEqual([]);
    await expect(chain.rewindTo(9n)).rejects.toThrow("no block 9 on the chain");
  });
});

describe("uncles", () => {
  it("offers a side block as an uncle in the next block, counted once in the total difficulty", async () => {
    const a = await newChain();
    const c = await newChain();
    const [mainBlock] = await mineBlocks(a, 1, bob!.address, 1n, 1_000n);
    const [sideBlock] = await mineBlocks(c, 1, carol!.address, 1n, 2_000n);
    const node = await newChain();
    expect((await node.importBlock(mainBlock!)).result).toBe("IMPORTED_BEST");
    expect((await node.importBlock(sideBlock!)).result).toBe("IMPORTED_NOT_BEST");

    const template = await node.buildTemplate([], { coinbase: MINER, timestamp: 3_000n });
    expect(template.block.uncles).toHaveLength(1);
    expect(template.block.header.uncleCount).toBe(1);
    expect(bytesToHex(template.block.uncles[0]!.stateRoot)).toBe(
      bytesToHex(sideBlock!.header.stateRoot),
    );
    const res = await node.importBlock(template.block);
    expect(res.result).toBe("IMPORTED_BEST");
    // Total difficulty: genesis 1 + block 1 + block 2 and its uncle.
    expect(node.head.totalDifficulty).toBe(4n);
    // Included once: the next block has none to offer.
    const next = await node.buildTemplate([], { coinbase: MINER, timestamp: 3_001n });
    expect(next.block.uncles).toHaveLength(0);
  });

  it("refuses a block that includes an uncle twice or an ancestor as an uncle", async () => {
    const a = await newChain();
    const blocks = await mineBlocks(a, 2, bob!.address, 1n, 1_000n);
    const node = await newChain();
    await node.importBlock(blocks[0]!);
    const asAncestor = {
      ...blocks[1]!,
      uncles: [blocks[0]!.header],
      header: { ...blocks[1]!.header, uncleCount: 1, unclesHash: unclesHash([blocks[0]!.header]) },
    };
    const res = await node.importBlock(asAncestor);
    expect(res.result === "INVALID_BLOCK" && res.reason).toContain("is an ancestor");
  });
});

describe("reorganizations", () => {
  it("switches to a heavier branch and back, with blocks, transactions, receipts and state", async () => {
    const a = await newChain();
    const c = await newChain();
    const branchA = await mineBlocks(a, 2, bob!.address, 100n, 1_000n);
    const branchC = await mineBlocks(c, 3, carol!.address, 7n, 2_000n);
    const node = await newChain();
    for (const block of branchA)
      expect((await node.importBlock(block)).result).toBe("IMPORTED_BEST");
    const aTx = branchA[1]!.transactions[0]!.hash;
    expect(await node.getTransactionLocation(aTx)).toBeDefined();

    // C's first two blocks are as heavy as A's: they stay on the side.
    expect((await node.importBlock(branchC[0]!)).result).toBe("IMPORTED_NOT_BEST");
    expect((await node.importBlock(branchC[1]!)).result).toBe("IMPORTED_NOT_BEST");
    expect(node.head.block.header.number).toBe(2n);
    // The third makes C heavier: it becomes the canonical chain.
    expect((await node.importBlock(branchC[2]!)).result).toBe("IMPORTED_BEST");
    expect(node.head.block.header.number).toBe(3n);
    for (let n = 1; n <= 3; n++) {
      const block = await node.getBlockByNumber(BigInt(n));
      expect(bytesToHex(block!.hash)).toBe(bytesToHex((await c.getBlockByNumber(BigInt(n)))!.hash));
    }
    expect(await node.getTransactionLocation(aTx)).toBeUndefined();
    const cTx = branchC[2]!.transactions[0]!.hash;
    expect((await node.getTransactionLocation(cTx))?.index).toBe(0);
    let state = await node.stateAt(node.head.block.header);
    expect(await state.getBalance(carol!.address)).toBe(DEV_ACCOUNT_BALANCE + 21n);
    expect(await state.getBalance(bob!.address)).toBe(DEV_ACCOUNT_BALANCE);
    // A's side blocks are still readable by hash, with their receipts.
    const sideA = await node.getBlockByHash(hexToBytes(bytesToHex(a.head.hash)));
    expect(sideA?.block.header.number).toBe(2n);
    expect((await node.getReceipts(a.head.hash))?.length).toBe(1);

    // A grows to 4: back to A, and numbers 1..4 follow it.
    const moreA = await mineBlocks(a, 2, bob!.address, 100n, 1_002n);
    expect((await node.importBlock(moreA[0]!)).result).toBe("IMPORTED_NOT_BEST");
    expect((await node.importBlock(moreA[1]!)).result).toBe("IMPORTED_BEST");
    expect(bytesToHex(node.head.hash)).toBe(bytesToHex(a.head.hash));
    expect(await node.getTransactionLocation(cTx)).toBeUndefined();
    expect(await node.getTransactionLocation(aTx)).toBeDefined();
    state = await node.stateAt(node.head.block.header);
    expect(await state.getBalance(bob!.address)).toBe(DEV_ACCOUNT_BALANCE + 400n);
    expect(await state.getBalance(carol!.address)).toBe(DEV_ACCOUNT_BALANCE);
    // And a block mined locally now builds on A.
    const mined = await node.mine([pay(alice, 4n, bob!.address, 1n)], { coinbase: MINER });
    expect(mined.block.header.number).toBe(5n);
    expect(mined.rejected).toEqual([]);
  });

  it("keeps the switched chain across a reopen", async () => {
    const a = await newChain();
    const c = await newChain();
    const branchA = await mineBlocks(a, 1, bob!.address, 1n, 1_000n);
    const branchC = await mineBlocks(c, 2, carol!.address, 1n, 2_000n);
    const dir = mkdtempSync(join(tmpdir(), "nodex-import-"));
    let db = await Database.open(join(dir, "db"));
    let node = await Chain.open(network, { db, executor, logger: nullLogger });
    await node.importBlock(branchA[0]!);
    for (const block of branchC) await node.importBlock(block);
    await db.close();
    db = await Database.open(join(dir, "db"));
    node = await Chain.open(network, { db, executor, logger: nullLogger });
    onTestFinished(async () => {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    });
    expect(bytesToHex(node.head.hash)).toBe(bytesToHex(c.head.hash));
    expect(bytesToHex((await node.getBlockByNumber(1n))!.hash)).toBe(
      bytesToHex((await c.getBlockByNumber(1n))!.hash),
    );
    expect(await node.getTransactionLocation(branchA[0]!.transactions[0]!.hash)).toBeUndefined();
  });
});
