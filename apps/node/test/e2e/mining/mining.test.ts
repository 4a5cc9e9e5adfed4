import {
  buildSyntheticProof,
  doubleSha256,
  hashMeetsTarget,
  syntheticCoinbase,
  txid,
} from "@nodex/mergemining";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// Merged mining over JSON-RPC: work for miners, solutions in each form the reference node takes,
// and the solo-mining protocol of eth_getWork / eth_submitWork (docs/mining.md).

const hex = (bytes: Uint8Array, prefix = true) =>
  `${prefix ? "0x" : ""}${Buffer.from(bytes).toString("hex")}`;
const bytes = (text: string) => Uint8Array.from(Buffer.from(text.replace(/^0x/, ""), "hex"));
const ascii = (text: string) => hex(new TextEncoder().encode(text));

interface Work {
  blockHashForMergedMining: string;
  target: string;
  feesPaidToMiner: string;
  notify: boolean;
  parentBlockHash: string;
}

let node: RunningNode;
beforeAll(async () => {
  // Interval mining far away: blocks come only from the miners of these tests.
  node = await startNode({ args: ["--mine-interval", "3600"] });
});
afterAll(async () => {
  await node?.stop();
});

async function result(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error, `${method} ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}

async function solve() {
  const work = (await result("mnr_getWork")) as Work;
  const proof = buildSyntheticProof({
    hashForMergedMining: bytes(work.blockHashForMergedMining),
    difficulty: 1n,
    time: Math.floor(Date.now() / 1000),
  });
  return { work, proof };
}

describe("mnr_ methods", () => {
  it("mnr_getWork answers the reference node's fields, with notify once per parent", async () => {
    const head = (await result("eth_getBlockByNumber", ["latest", false])) as { hash: string };
    const work = (await result("mnr_getWork")) as Work;
    expect(Object.keys(work).sort()).toEqual(
      ["blockHashForMergedMining", "feesPaidToMiner", "notify", "parentBlockHash", "target"].sort(),
    );
    expect(work.blockHashForMergedMining).toMatch(/^0x[0-9a-f]{64}$/);
    expect(work.target).toBe(`0x${"55".repeat(32)}`);
    expect(work.feesPaidToMiner).toMatch(/^\d+$/);
    expect(work.parentBlockHash).toBe(head.hash);
    expect(((await result("mnr_getWork")) as Work).notify).toBe(false);
  });

  it("mnr_submitBitcoinBlock imports the block its coinbase names, and says so", async () => {
    const before = Number(await result("eth_blockNumber"));
    const { work, proof } = await solve();
    // Pool software sends plain hex; 0x is taken too.
    const info = (await result("mnr_submitBitcoinBlock", [hex(proof.bitcoinBlock, false)])) as {
      blockImportedResult: string;
      blockHash: string;
      blockIncludedHeight: string;
    };
    expect(info.blockImportedResult).toBe(ascii("IMPORTED_BEST"));
    expect(info.blockIncludedHeight).toBe(`0x${(before + 1).toString(16)}`);
    const block = (await result("eth_getBlockByNumber", ["latest", false])) as Record<
      string,
      string
    >;
    expect(block.hash).toBe(info.blockHash);
    expect(block.hashForMergedMining).toBe(work.blockHashForMergedMining);
    expect(block.bitcoinMergedMiningHeader).toBe(hex(proof.bitcoinHeader));
    expect(block.bitcoinMergedMiningCoinbaseTransaction).toBe(hex(proof.coinbase));
    // A replay changes nothing.
    const again = (await result("mnr_submitBitcoinBlock", [hex(proof.bitcoinBlock)])) as {
      blockImportedResult: string;
    };
    expect(again.blockImportedResult).toBe(ascii("EXIST"));
    expect(Number(await result("eth_blockNumber"))).toBe(before + 1);
  });

  it("takes header, coinbase and txids, or header, coinbase and Merkle branch", async () => {
    const before = Number(await result("eth_blockNumber"));
    let { proof } = await solve();
    const displayTxid = hex(txid(proof.coinbaseTransaction).slice().reverse(), false);
    const a = (await result("mnr_submitBitcoinBlockTransactions", [
      "00",
      hex(proof.bitcoinHeader, false),
      hex(proof.coinbaseTransaction, false),
      displayTxid,
    ])) as { blockImportedResult: string };
    expect(a.blockImportedResult).toBe(ascii("IMPORTED_BEST"));
    ({ proof } = await solve());
    const b = (await result("mnr_submitBitcoinBlockPartialMerkle", [
      "00",
      hex(proof.bitcoinHeader, false),
      hex(proof.coinbaseTransaction, false),
      hex(txid(proof.coinbaseTransaction), false),
      "1",
    ])) as { blockImportedResult: string };
    expect(b.blockImportedResult).toBe(ascii("IMPORTED_BEST"));
    expect(Number(await result("eth_blockNumber"))).toBe(before + 2);
  });

  it("refuses forged, foreign and malformed submissions with -33000 or -32602, leaving the chain", async () => {
    const before = Number(await result("eth_blockNumber"));
    const { work, proof } = await solve();
    const foreign = buildSyntheticProof({
      hashForMergedMining: new Uint8Array(32).fill(9),
      difficulty: 1n,
      time: 1,
    });
    const res1 = await call(node.url, "mnr_submitBitcoinBlock", [hex(foreign.bitcoinBlock)]);
    expect(res1.error).toEqual({
      code: -33000,
      message: `Cannot publish block, could not find hash 0x${"09".repeat(32)} in the cache`,
    });
    // Not enough proof of work.
    const weak = proof.bitcoinHeader.slice();
    for (let n = 0; ; n++) {
      new DataView(weak.buffer).setUint32(76, n, true);
      if (!hashMeetsTarget(doubleSha256(weak), bytes(work.target))) break;
    }
    const res2 = await call(node.url, "mnr_submitBitcoinBlockTransactions", [
      "00",
      hex(weak),
      hex(proof.coinbaseTransaction),
      hex(txid(proof.coinbaseTransaction).slice().reverse()),
    ]);
    expect(res2.error?.code).toBe(-33000);
    expect(res2.error?.message).toMatch(/^Invalid block supplied by miner: 0x[0-9a-f]{64} /);
    expect(res2.error?.message).toContain("target");
    // Malformed input.
    for (const [method, params] of [
      ["mnr_submitBitcoinBlock", ["zz"]],
      ["mnr_submitBitcoinBlock", ["abc"]],
      ["mnr_submitBitcoinBlock", [12]],
      ["mnr_submitBitcoinBlockTransactions", ["00", "00", "00", ""]],
      ["mnr_submitBitcoinBlockPartialMerkle", ["00", hex(proof.bitcoinHeader), "00", "", "1"]],
    ] as const) {
      const res = await call(node.url, method, [...params]);
      expect(res.error?.code, `${method} ${JSON.stringify(params)}`).toBe(-32602);
    }
    const garbage = await call(node.url, "mnr_submitBitcoinBlock", ["00112233"]);
    expect(garbage.error?.code).toBe(-33000);
    expect(garbage.error?.message).toMatch(/^invalid Bitcoin block: /);
    expect(Number(await result("eth_blockNumber"))).toBe(before);
  });
});

describe("transactions in the work", () => {
  it("a block mined from the work carries the pool's transactions and their fees", async () => {
    const { Wallet } = await import("ethers");
    const wallet = new Wallet("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
    const raw = await wallet.signTransaction({
      to: `0x${"ab".repeat(20)}`,
      value: 1n,
      gasLimit: 21_000n,
      gasPrice: 3n,
      nonce: 0,
      chainId: 33,
      type: 0,
    });
    const hash = (await result("eth_sendRawTransaction", [raw])) as string;
    // The interval is an hour: the transaction waits for a miner.
    expect(await result("eth_getTransactionReceipt", [hash])).toBeNull();
    const { work, proof } = await solve();
    expect(work.feesPaidToMiner).toBe("63000");
    await result("mnr_submitBitcoinBlock", [hex(proof.bitcoinBlock)]);
    const receipt = (await result("eth_getTransactionReceipt", [hash])) as { status: string };
    expect(receipt.status).toBe("0x1");
    const block = (await result("eth_getBlockByNumber", ["latest", false])) as {
      transactions: string[];
      paidFees: string;
    };
    expect(block.transactions).toEqual([hash]);
    expect(block.paidFees).toBe("0xf618");
    expect(await result("txpool_status")).toEqual({ pending: 0, queued: 0 });
  });
});

describe("stale work", () => {
  it("a solution for work older than the last 20 templates is refused and changes nothing", async () => {
    const { proof: stale } = await solve();
    for (let i = 0; i < 21; i++) {
      const { proof } = await solve();
      await result("mnr_submitBitcoinBlock", [hex(proof.bitcoinBlock)]);
    }
    const head = await result("eth_blockNumber");
    const res = await call(node.url, "mnr_submitBitcoinBlock", [hex(stale.bitcoinBlock)]);
    expect(res.error?.code).toBe(-33000);
    expect(res.error?.message).toMatch(
      /^Cannot publish block, could not find hash 0x[0-9a-f]{64} in the cache$/,
    );
    expect(await result("eth_blockNumber")).toBe(head);
  });
});

describe("uncles", () => {
  it("a second solution for the same parent becomes an uncle of the next block", async () => {
    const work = (await result("mnr_getWork")) as Work;
    const solution = (extraNonce: bigint) =>
      buildSyntheticProof({
        hashForMergedMining: bytes(work.blockHashForMergedMining),
        difficulty: 1n,
        time: Math.floor(Date.now() / 1000),
        extraNonce,
      });
    const first = (await result("mnr_submitBitcoinBlock", [hex(solution(100n).bitcoinBlock)])) as {
      blockImportedResult: string;
    };
    expect(first.blockImportedResult).toBe(ascii("IMPORTED_BEST"));
    const second = (await result("mnr_submitBitcoinBlock", [hex(solution(200n).bitcoinBlock)])) as {
      blockImportedResult: string;
      blockHash: string;
    };
    expect(second.blockImportedResult).toBe(ascii("IMPORTED_NOT_BEST"));

    const { proof } = await solve();
    await result("mnr_submitBitcoinBlock", [hex(proof.bitcoinBlock)]);
    expect(await result("eth_getUncleCountByBlockNumber", ["latest"])).toBe("0x1");
    const uncle = (await result("eth_getUncleByBlockNumberAndIndex", ["latest", "0x0"])) as {
      hash: string;
    };
    expect(uncle.hash).toBe(second.blockHash);
    const block = (await result("eth_getBlockByNumber", ["latest", false])) as Record<
      string,
      unknown
    >;
    expect(block.uncles).toEqual([second.blockHash]);
    expect(block.cumulativeDifficulty).toBe("0x2");
    const parent = (await result("eth_getBlockByHash", [block.parentHash, false])) as {
      totalDifficulty: string;
    };
    expect(BigInt(block.totalDifficulty as string)).toBe(BigInt(parent.totalDifficulty) + 2n);
  });
});

describe("eth_getWork and eth_submitWork", () => {
  it("takes a nonce that meets the boundary, refuses one that does not, and stale or replayed work", async () => {
    const before = Number(await result("eth_blockNumber"));
    const [powHash, seed, boundary] = (await result("eth_getWork")) as string[];
    expect(powHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(boundary).toBe(`0x${"55".repeat(32)}`);
    const seedBytes = bytes(seed!);
    const view = new DataView(seedBytes.buffer, seedBytes.byteOffset);
    const time = view.getUint32(0);
    const bits = view.getUint32(4);
    // The synthetic block of docs/mining.md, extra-nonce 3.
    const root = txid(syntheticCoinbase(bytes(powHash!), 3n));
    const header = new Uint8Array(80);
    const h = new DataView(header.buffer);
    h.setUint32(0, 0x20000000, true);
    header.set(root, 36);
    h.setUint32(68, time, true);
    h.setUint32(72, bits, true);
    let good = -1;
    let bad = -1;
    for (let n = 0; good < 0 || bad < 0; n++) {
      h.setUint32(76, n, true);
      if (hashMeetsTarget(doubleSha256(header), bytes(boundary!))) good = good < 0 ? n : good;
      else bad = bad < 0 ? n : bad;
    }
    const nonce = (n: number) => `0x00000003${n.toString(16).padStart(8, "0")}`;
    const mix = `0x${"00".repeat(32)}`;
    expect(await result("eth_submitWork", [nonce(bad), powHash, mix])).toBe(false);
    expect(await result("eth_submitWork", [nonce(good), `0x${"11".repeat(32)}`, mix])).toBe(false);
    expect(await result("eth_submitWork", [nonce(good), powHash, mix])).toBe(true);
    expect(Number(await result("eth_blockNumber"))).toBe(before + 1);
    expect(await result("eth_submitWork", [nonce(good), powHash, mix])).toBe(false);
    const badNonce = await call(node.url, "eth_submitWork", ["0x01", powHash, mix]);
    expect(badNonce.error?.code).toBe(-32602);
  });

  it("reports hashrates", async () => {
    expect(
      await result("eth_submitHashrate", [`0x${"00".repeat(31)}64`, `0x${"ab".repeat(32)}`]),
    ).toBe(true);
    expect(await result("eth_hashrate")).toBe("0x64");
    expect(await result("eth_mining")).toBe(true);
    expect(await result("eth_netHashrate")).toMatch(/^0x[0-9a-f]+$/);
  });
});

describe("mnr_ on mainnet", () => {
  it("is off unless enabled", async () => {
    const mainnet = await startNode({ network: "--mainnet" });
    try {
      const res = await call(mainnet.url, "mnr_getWork", []);
      expect(res.error?.code).toBe(-32601);
    } finally {
      await mainnet.stop();
    }
  });
});
