import { decodeRlp, JsonRpcProvider, keccak256, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// Lookups by block and index, uncles, proofs and the chain-specific raw views.
const KEY4 = "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a";
const TO = "0x000000000000000000000000000000000000f00d";

let node: RunningNode;
let txHash: string;
let blockHash: string;
let blockNumber: number;
beforeAll(async () => {
  node = await startNode();
  const provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
  const receipt = await (
    await new Wallet(KEY4, provider).sendTransaction({ to: TO, value: 77n })
  ).wait();
  txHash = receipt!.hash;
  blockHash = receipt!.blockHash;
  blockNumber = receipt!.blockNumber;
  provider.destroy();
});
afterAll(async () => {
  await node?.stop();
});

const result = async (method: string, params: unknown[]) => {
  const res = await call(node.url, method, params);
  expect(res.error).toBeUndefined();
  return res.result as Record<string, unknown> | string | null;
};

describe("lookups by block and index", () => {
  it("finds a transaction by block hash or number and index, and null past the end", async () => {
    const byHash = (await result("eth_getTransactionByBlockHashAndIndex", [
      blockHash,
      "0x0",
    ])) as Record<string, unknown>;
    expect(byHash.hash).toBe(txHash);
    expect(byHash.transactionIndex).toBe("0x0");
    const byNumber = (await result("eth_getTransactionByBlockNumberAndIndex", [
      `0x${blockNumber.toString(16)}`,
      "0x0",
    ])) as Record<string, unknown>;
    expect(byNumber.hash).toBe(txHash);
    expect(await result("eth_getTransactionByBlockHashAndIndex", [blockHash, "0x1"])).toBeNull();
  });

  it("carries the spec's extra string `_id` (the transaction hash) on these two methods only", async () => {
    const byHash = (await result("eth_getTransactionByBlockHashAndIndex", [
      blockHash,
      "0x0",
    ])) as Record<string, unknown>;
    const byNumber = (await result("eth_getTransactionByBlockNumberAndIndex", [
      `0x${blockNumber.toString(16)}`,
      "0x0",
    ])) as Record<string, unknown>;
    expect(byHash._id).toBe(txHash);
    expect(byNumber._id).toBe(txHash);
    const { _id, ...rest } = byHash;
    expect(rest).toEqual(await result("eth_getTransactionByHash", [txHash]));
    expect(await result("eth_getTransactionByHash", [txHash])).not.toHaveProperty("_id");
    const block = (await result("eth_getBlockByHash", [blockHash, true])) as {
      transactions: Record<string, unknown>[];
    };
    expect(block.transactions[0]).not.toHaveProperty("_id");
  });

  it("counts no uncles and finds none", async () => {
    expect(await result("eth_getUncleCountByBlockHash", [blockHash])).toBe("0x0");
    expect(await result("eth_getUncleCountByBlockNumber", ["latest"])).toBe("0x0");
    expect(await result("eth_getUncleByBlockHashAndIndex", [blockHash, "0x0"])).toBeNull();
    expect(await result("eth_getUncleCountByBlockHash", [`0x${"44".repeat(32)}`])).toBeNull();
  });
});

describe("eth_getProof", () => {
  it("proves a balance against the block's state root", async () => {
    const proof = (await result("eth_getProof", [TO, [], "latest"])) as Record<string, unknown> & {
      accountProof: string[];
    };
    expect(proof.balance).toBe("0x4d");
    expect(proof.nonce).toBe("0x0");
    const block = (await result("eth_getBlockByNumber", ["latest", false])) as {
      stateRoot: string;
    };
    expect(keccak256(proof.accountProof[0]!)).toBe(block.stateRoot);
  });
});

describe("nodex_ raw views", () => {
  it("gives the raw header of the chain's layout, by hash and by number", async () => {
    const raw = (await result("nodex_getRawBlockHeaderByHash", [blockHash])) as string;
    const fields = decodeRlp(raw) as string[];
    expect(fields).toHaveLength(18);
    expect(keccak256(raw)).toBe(blockHash);
    expect(await result("nodex_getRawBlockHeaderByNumber", [`0x${blockNumber.toString(16)}`])).toBe(
      raw,
    );
    expect(await result("nodex_getRawBlockHeaderByHash", [`0x${"55".repeat(32)}`])).toBeNull();
  });

  it("gives the raw receipt", async () => {
    const raw = (await result("nodex_getRawTransactionReceiptByHash", [txHash])) as string;
    const [status, cumulativeGas] = decodeRlp(raw) as string[];
    expect(status).toBe("0x01");
    expect(cumulativeGas).toBe("0x5208");
  });
});
