import { extractTaggedHash, verifyMergedMiningProof } from "@nodex/mergemining";
import {
  type Block,
  type BlockHeader,
  bytesToHex,
  FORK_DETECTION_HEIGHT,
  hashForMergedMiningBase,
  NETWORKS,
} from "@nodex/types";
import { describe, expect, it } from "vitest";
import {
  AncestryMemo,
  type Chain,
  hashForMergedMining,
  mergedMiningRules,
  SYNTHETIC_SEALER,
} from "../../src/index.js";
import { chainFactory, MINER, network, withHeader } from "./fixtures.js";

const rules = mergedMiningRules(network);
const makeChain = chainFactory();
const newChain = () => makeChain({ rules, sealer: SYNTHETIC_SEALER });

async function mineEmpty(chain: Chain, count: number, from = 1_000n): Promise<Block[]> {
  const out: Block[] = [];
  for (let i = 0; i < count; i++) {
    const mined = await chain.mine([], { coinbase: MINER, timestamp: from + BigInt(i) });
    out.push(mined.block);
  }
  return out;
}

const flip = (bytes: Uint8Array, index: number): Uint8Array => {
  const out = bytes.slice();
  out[index] = out[index]! ^ 0x01;
  return out;
};

describe("merged mining on the chain", () => {
  it("seals every mined block with a real proof of its hashForMergedMining", async () => {
    const chain = await newChain();
    const [block] = await mineEmpty(chain, 1);
    const { header } = block!;
    expect(header.bitcoinMergedMiningHeader).toHaveLength(80);
    const hfmm = await chain.hashForMergedMining(header);
    expect(bytesToHex(hfmm)).toBe(bytesToHex(hashForMergedMiningBase(header)));
    expect(bytesToHex(extractTaggedHash(header.bitcoinMergedMiningCoinbaseTransaction)!)).toBe(
      bytesToHex(hfmm),
    );
    const verified = verifyMergedMiningProof({
      hashForMergedMining: hfmm,
      difficulty: header.difficulty,
      bitcoinHeader: header.bitcoinMergedMiningHeader,
      coinbase: header.bitcoinMergedMiningCoinbaseTransaction,
      merkleProof: header.bitcoinMergedMiningMerkleProof,
    });
    expect(verified.ok).toBe(true);
  });

  it("imports sealed blocks on another node and refuses forged proofs, saying why", async () => {
    const source = await newChain();
    const blocks = await mineEmpty(source, 3);
    const node = await newChain();
    expect((await node.importBlock(blocks[0]!)).result).toBe("IMPORTED_BEST");

    const forged: [string, Block, string][] = [
      [
        "a flipped bit in the Bitcoin header",
        withHeader(blocks[1]!, {
          bitcoinMergedMiningHeader: flip(blocks[1]!.header.bitcoinMergedMiningHeader, 40),
        }),
        "invalid merged-mining proof",
      ],
      [
        "a flipped bit in the coinbase",
        withHeader(blocks[1]!, {
          bitcoinMergedMiningCoinbaseTransaction: flip(
            blocks[1]!.header.bitcoinMergedMiningCoinbaseTransaction,
            50,
          ),
        }),
        "invalid merged-mining proof",
      ],
      [
        "no proof at all",
        withHeader(blocks[1]!, {
          bitcoinMergedMiningHeader: new Uint8Array(),
          bitcoinMergedMiningCoinbaseTransaction: new Uint8Array(),
        }),
        "invalid merged-mining proof",
      ],
      [
        "the proof of another block",
        withHeader(blocks[1]!, {
          bitcoinMergedMiningHeader: blocks[2]!.header.bitcoinMergedMiningHeader,
          bitcoinMergedMiningCoinbaseTransaction:
            blocks[2]!.header.bitcoinMergedMiningCoinbaseTransaction,
          bitcoinMergedMiningMerkleProof: blocks[2]!.header.bitcoinMergedMiningMerkleProof,
        }),
        "invalid merged-mining proof",
      ],
    ];
    for (const [what, block, reason] of forged) {
      const res = await node.importBlock(block);
      expect(res.result, what).toBe("INVALID_BLOCK");
      expect(res.result === "INVALID_BLOCK" && res.reason, what).toContain(reason);
    }
    expect(node.head.block.header.number).toBe(1n);
    expect((await node.importBlock(blocks[1]!)).result).toBe("IMPORTED_BEST");
    expect((await node.importBlock(blocks[2]!)).result).toBe("IMPORTED_BEST");
  });

  it("commits to fork-detection data from block 449, and other nodes check it", async () => {
    const source = await newChain();
    const blocks = await mineEmpty(source, Number(FORK_DETECTION_HEIGHT) + 2);
    const last = blocks[blocks.length - 1]!.header;
    const hfmm = await source.hashForMergedMining(last);
    const base = hashForMergedMiningBase(last);
    expect(bytesToHex(hfmm.subarray(0, 20))).toBe(bytesToHex(base.subarray(0, 20)));
    expect(bytesToHex(hfmm.subarray(20))).not.toBe(bytesToHex(base.subarray(20)));
    // Bytes 8..11: the height, big-endian.
    expect(new DataView(hfmm.buffer, hfmm.byteOffset).getUint32(28)).toBe(Number(last.number));

    const node = await newChain();
    for (const block of blocks)
      expect((await node.importBlock(block)).result).toBe("IMPORTED_BEST");
    expect(bytesToHex(node.head.hash)).toBe(bytesToHex(source.head.hash));
  }, 60_000);

  it("works out the same fork-detection data with and without what it remembers, on either branch", async () => {
    // Two chains share 460 blocks, then go 80 blocks each their own way (other times, so other
    // blocks), across a checkpoint boundary (every 64 blocks).
    const a = await newChain();
    const shared = await mineEmpty(a, 460);
    const b = await newChain();
    for (const block of shared) expect((await b.importBlock(block)).result).toBe("IMPORTED_BEST");
    const ownA = await mineEmpty(a, 80, 5_000n);
    const ownB = await mineEmpty(b, 80, 9_000n);
    for (const block of ownB) await a.importBlock(block);
    const headers = [...shared.slice(440), ...ownA, ...ownB].map((block) => block.header);
    const memo = new AncestryMemo(16);
    // Newest first, then oldest first: the memo is cold, then warm.
    for (const header of [...headers].reverse().concat(headers)) {
      const plain = await hashForMergedMining(a, header);
      expect(bytesToHex(await hashForMergedMining(a, header, memo))).toBe(bytesToHex(plain));
      expect(bytesToHex(await a.hashForMergedMining(header))).toBe(bytesToHex(plain));
    }
    // The branches differ in their fork-detection data past their common checkpoints.
    const atA = await hashForMergedMining(a, ownA[79]!.header);
    const atB = await hashForMergedMining(a, ownB[79]!.header);
    expect(bytesToHex(atA.subarray(20, 27))).not.toBe(bytesToHex(atB.subarray(20, 27)));
  }, 60_000);
});

describe("difficulty", () => {
  const parent = { difficulty: 2_048_000n, timestamp: 1_000n } as BlockHeader;
  it("rises when blocks come faster than the target, falls when slower, never below the minimum", () => {
    expect(rules.difficulty(parent, 1_005n, 0)).toBe(2_049_000n);
    expect(rules.difficulty(parent, 1_010n, 0)).toBe(2_048_000n);
    expect(rules.difficulty(parent, 1_020n, 0)).toBe(2_047_000n);
    // Each uncle stretches the target time.
    expect(rules.difficulty(parent, 1_015n, 1)).toBe(2_049_000n);
    expect(rules.difficulty({ difficulty: 1n, timestamp: 0n } as BlockHeader, 100n, 0)).toBe(1n);
  });

  it("refuses an imported block whose difficulty is not the computed one", async () => {
    const source = await newChain();
    const [block] = await mineEmpty(source, 1);
    const node = await newChain();
    const res = await node.importBlock(withHeader(block!, { difficulty: 5n }));
    expect(res.result === "INVALID_BLOCK" && res.reason).toContain(
      "difficulty 5 is not the expected 1",
    );
  });

  it("takes blocks far in the future on development networks, not on public ones", async () => {
    const now = BigInt(Math.floor(Date.now() / 1000));
    const source = await newChain();
    const [ahead] = await mineEmpty(source, 1, now + 3_600n);
    const node = await newChain();
    expect((await node.importBlock(ahead!)).result).toBe("IMPORTED_BEST");
    expect(rules.maxFutureSeconds).toBeNull();
    expect(mergedMiningRules(NETWORKS.testnet).maxFutureSeconds).toBe(540n);
    const strict = await makeChain({
      rules: { ...rules, maxFutureSeconds: 540n },
      sealer: SYNTHETIC_SEALER,
    });
    const res = await strict.importBlock(ahead!);
    expect(res.result === "INVALID_BLOCK" && res.reason).toContain("s in the future");
  });
});
