import { RLP } from "@ethereumjs/rlp";
import { deriveDevAccounts } from "@nodex/types";
import { getBytes, hexlify, keccak256, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, send, startNode } from "../helpers/node.js";
import { compile } from "../helpers/solidity.js";
import { proven, walkProof } from "./verify.js";

// nodex_getTransactionReceiptNodesByHash: the receipt-trie nodes of a receipt, leaf first.
// Reversed, they are a root-first proof of key RLP(transaction index) against the block's
// receiptsRoot, verified with @ethereumjs/mpt and with verify.ts's own walk of the trie, and the
// value they prove is the receipt nodex_getRawTransactionReceiptByHash gives. Blocks are made
// with evm_mine (no automine).

const [alice, bob, carol] = deriveDevAccounts();
const wallets = [alice, bob].map((a) => new Wallet(hexlify(a!.privateKey)));
const { Token } = compile("Token.sol");

let node: RunningNode;
/** A block of many transactions: transfers, a contract with logs, a failing one. */
let big: { hash: string; receiptsRoot: string; transactions: string[] };
/** The next block, with one transaction. */
let single: { hash: string; receiptsRoot: string; transactions: string[] };

async function result(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error, `${method}: ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}

const nonces = [0, 0];
async function submit(
  from: number,
  tx: { to?: string; data?: string; value?: bigint; gasLimit?: bigint },
) {
  const raw = await wallets[from]!.signTransaction({
    gasLimit: 100_000n,
    gasPrice: 0n,
    nonce: nonces[from]!++,
    chainId: 33,
    type: 0,
    ...tx,
  });
  return (await result("eth_sendRawTransaction", [raw])) as string;
}

const blockOf = async (hash: string) =>
  (await result("eth_getBlockByHash", [hash, false])) as typeof big;

beforeAll(async () => {
  node = await startNode({ args: ["--no-automine"] });
  const carolAddress = hexlify(carol!.address);
  await submit(0, { data: `${Token!.bytecode}${"00".repeat(31)}64`, gasLimit: 2_000_000n });
  for (let i = 0; i < 20; i++) await submit(i % 2, { to: carolAddress, value: BigInt(i + 1) });
  // Out of gas: a failed receipt (status 0) in the block.
  await submit(1, { data: `${Token!.bytecode}${"00".repeat(32)}`, gasLimit: 150_000n });
  await result("evm_mine");
  const head = (await result("eth_getBlockByNumber", ["latest", false])) as typeof big;
  big = head;
  expect(big.transactions).toHaveLength(22);
  await submit(0, { to: carolAddress, value: 7n });
  await result("evm_mine");
  single = (await result("eth_getBlockByNumber", ["latest", false])) as typeof big;
  expect(single.transactions).toHaveLength(1);
});
afterAll(async () => {
  await node?.stop();
});

async function nodesOf(blockHash: string, txHash: string): Promise<string[]> {
  return (await result("nodex_getTransactionReceiptNodesByHash", [blockHash, txHash])) as string[];
}

describe("nodex_getTransactionReceiptNodesByHash", () => {
  it("proves every receipt of a block against its receiptsRoot, leaf first", async () => {
    const statuses = new Set<string>();
    for (const [index, txHash] of big.transactions.entries()) {
      const nodes = await nodesOf(big.hash, txHash);
      for (const n of nodes) expect(n).toMatch(/^0x([0-9a-f]{2})+$/);
      const proof = nodes.map((n) => getBytes(n)).reverse();
      // The last node is the root.
      expect(keccak256(proof[0]!)).toBe(big.receiptsRoot);
      const value = await proven(getBytes(big.receiptsRoot), RLP.encode(index), proof);
      const raw = (await result("nodex_getRawTransactionReceiptByHash", [txHash])) as string;
      expect(value === null ? null : hexlify(value)).toBe(raw);
      // The first node is the leaf: [path, receipt].
      const leaf = RLP.decode(getBytes(nodes[0]!)) as Uint8Array[];
      expect(leaf).toHaveLength(2);
      expect(hexlify(leaf[1]!)).toBe(raw);
      const receipt = (await result("eth_getTransactionReceipt", [txHash])) as { status: string };
      statuses.add(receipt.status);
    }
    expect([...statuses].sort()).toEqual(["0x0", "0x1"]);
    // Another index's key does not verify with these nodes.
    const nodes = await nodesOf(big.hash, big.transactions[3]!);
    const proof = nodes.map((n) => getBytes(n)).reverse();
    await expect(proven(getBytes(big.receiptsRoot), RLP.encode(4), proof)).rejects.toThrow();
    await expect(walkProof(getBytes(big.receiptsRoot), RLP.encode(4), proof)).rejects.toThrow(
      "the proof has no node",
    );
  });

  it("is the root alone for a block of one transaction", async () => {
    const nodes = await nodesOf(single.hash, single.transactions[0]!);
    expect(nodes).toHaveLength(1);
    expect(keccak256(nodes[0]!)).toBe(single.receiptsRoot);
    const raw = await result("nodex_getRawTransactionReceiptByHash", [single.transactions[0]]);
    const value = await proven(getBytes(single.receiptsRoot), RLP.encode(0), [getBytes(nodes[0]!)]);
    expect(hexlify(value!)).toBe(raw);
    // The leaf's path is the whole key, RLP(0) = 0x80: no other index is in this trie.
    expect(
      await proven(getBytes(single.receiptsRoot), RLP.encode(1), [getBytes(nodes[0]!)]),
    ).toBeNull();
    expect(await blockOf(single.hash)).toMatchObject({ receiptsRoot: single.receiptsRoot });
  });

  it("answers -32602 naming what is missing: an unknown block, a transaction not in the block", async () => {
    const unknown = `0x${"55".repeat(32)}`;
    const body = async (params: unknown[]) =>
      (
        await send(node.url, {
          jsonrpc: "2.0",
          id: 7,
          method: "nodex_getTransactionReceiptNodesByHash",
          params,
        })
      ).json;
    expect(await body([unknown, big.transactions[0]])).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: { code: -32602, message: `block ${unknown} not found` },
    });
    expect(await body([single.hash, big.transactions[0]])).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: {
        code: -32602,
        message: `transaction ${big.transactions[0]} is not in block ${single.hash}`,
      },
    });
    expect(await body([big.hash, unknown])).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: { code: -32602, message: `transaction ${unknown} is not in block ${big.hash}` },
    });
    const genesis = (await result("eth_getBlockByNumber", ["earliest", false])) as typeof big;
    expect(
      ((await body([genesis.hash, big.transactions[0]])) as { error: { code: number } }).error.code,
    ).toBe(-32602);
    expect(((await body([big.hash])) as { error: { code: number } }).error.code).toBe(-32602);
    expect(
      ((await body(["0x12", big.transactions[0]])) as { error: { code: number } }).error.code,
    ).toBe(-32602);
  });
});
