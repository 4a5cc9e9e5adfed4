import {
  buildSyntheticProof,
  encodeBip34Height,
  encodeBitcoinTransaction,
  grindNonce,
  RSK_TAG,
  syntheticHeader,
  targetToCompact,
} from "@nodex/mergemining";
import { writeU32LE } from "@nodex/types";
import { getBytes, hexlify, toUtf8Bytes } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, send, startNode } from "../helpers/node.js";

// eth_bridgeState: the reference node's shape; no bridge runs, so nothing waits for signatures;
// btcBlockchainBestChainHeight is the highest BIP34 height the merged-mining proofs of the best
// block and its 127 ancestors state (a coinbase kept whole in the proof), else 0. Blocks come
// from the Bitcoin blocks these tests submit (mnr_submitBitcoinBlock) and from evm_mine.

let node: RunningNode;
beforeAll(async () => {
  // Interval mining far away: blocks come only from these tests.
  node = await startNode({ args: ["--mine-interval", "3600"] });
});
afterAll(async () => {
  await node?.stop();
});

async function result(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error, `${method}: ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}

/** The whole answer, as sent. */
async function bridgeState(): Promise<unknown> {
  return (await send(node.url, { jsonrpc: "2.0", id: 1, method: "eth_bridgeState", params: [] }))
    .json;
}
const answer = (height: number) => ({
  jsonrpc: "2.0",
  id: 1,
  result: { rskTxsWaitingForSignatures: [], btcBlockchainBestChainHeight: height },
});

/**
 * Mines the node's current work in a one-transaction Bitcoin block whose coinbase states
 * `height` under BIP34 (or pushes an 8-byte extra-nonce when `undefined`), and submits it.
 * The coinbase is short: its RSKBLOCK: tag starts within the first 64 bytes, so the proof
 * keeps it whole.
 */
async function mineBitcoinBlock(height: bigint | undefined): Promise<void> {
  const work = (await result("mnr_getWork")) as {
    blockHashForMergedMining: string;
    target: string;
  };
  const coinbase = encodeBitcoinTransaction(
    {
      version: 1,
      inputs: [
        {
          prevTxid: new Uint8Array(32),
          prevIndex: 0xffffffff,
          scriptSig:
            height === undefined
              ? Uint8Array.of(8, 1, 2, 3, 4, 5, 6, 7, 8)
              : encodeBip34Height(height),
          sequence: 0xffffffff,
          witness: [],
        },
      ],
      outputs: [
        {
          value: 0n,
          scriptPubKey: Uint8Array.of(
            0x6a,
            41,
            ...RSK_TAG,
            ...getBytes(work.blockHashForMergedMining),
          ),
        },
      ],
      lockTime: 0,
      hasWitness: false,
    },
    false,
  );
  const target = getBytes(work.target);
  const header = syntheticHeader(
    coinbase,
    Math.floor(Date.now() / 1000),
    targetToCompact(BigInt(work.target)),
  );
  const nonce = grindNonce(header, target, 0, 2 ** 32);
  expect(nonce).toBeGreaterThanOrEqual(0);
  writeU32LE(header, 76, nonce);
  const block = Uint8Array.of(...header, 1, ...coinbase);
  const info = (await result("mnr_submitBitcoinBlock", [hexlify(block)])) as {
    blockImportedResult: string;
  };
  expect(info.blockImportedResult).toBe(hexlify(toUtf8Bytes("IMPORTED_BEST")));
}

describe("eth_bridgeState", () => {
  it("is the reference node's shape, with height 0 while no proof states one", async () => {
    expect(await bridgeState()).toEqual(answer(0));
    // Synthetic proofs (the node's own blocks) push an extra-nonce, not a height.
    await result("evm_mine");
    await result("evm_mine");
    expect(Number(await result("eth_blockNumber"))).toBeGreaterThanOrEqual(2);
    expect(await bridgeState()).toEqual(answer(0));
  });

  it("is the highest height the recent proofs state", async () => {
    await mineBitcoinBlock(900_123n);
    const latest = (await result("eth_getBlockByNumber", ["latest", false])) as Record<
      string,
      string
    >;
    // Kept whole: a byte count of 0 and an empty midstate's worth of bytes, then the coinbase.
    expect(latest.bitcoinMergedMiningCoinbaseTransaction!.slice(0, 18)).toBe(`0x${"00".repeat(8)}`);
    expect(await bridgeState()).toEqual(answer(900_123));
    // A miner on a stale Bitcoin block, and one whose coinbase states nothing, change nothing.
    await mineBitcoinBlock(899_990n);
    await mineBitcoinBlock(undefined);
    const synthetic = buildSyntheticProof({
      hashForMergedMining: getBytes(
        ((await result("mnr_getWork")) as { blockHashForMergedMining: string })
          .blockHashForMergedMining,
      ),
      difficulty: 3n,
      time: Math.floor(Date.now() / 1000),
    });
    await result("mnr_submitBitcoinBlock", [hexlify(synthetic.bitcoinBlock)]);
    expect(await bridgeState()).toEqual(answer(900_123));
    await mineBitcoinBlock(900_124n);
    expect(await bridgeState()).toEqual(answer(900_124));
  });

  it("reads the best block and its 127 ancestors, no further", async () => {
    for (let i = 0; i < 127; i++) await result("evm_mine");
    expect(await bridgeState()).toEqual(answer(900_124));
    await result("evm_mine");
    expect(await bridgeState()).toEqual(answer(0));
  }, 60_000);

  it("takes no parameters", async () => {
    const res = await call(node.url, "eth_bridgeState", [1]);
    expect(res.error?.code).toBe(-32602);
  });
});
